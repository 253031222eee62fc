import { runPipeline, workerFailure } from 'pipeline-orchestrator/testing';
import { expect, it } from 'vitest';
import { price } from '../src/pricing.js';
import { createQuotesPipeline, type QuoteRequest } from '../src/quotes.js';

const quotes = createQuotesPipeline('http://pricing.invalid/transition');

it('prices a quote through the pricing worker', async () => {
  const run = await runPipeline(quotes, { sku: 'premium-1', quantity: 3 }, { remote: { price: (input) => price(input as QuoteRequest) } });
  expect(run.status).toBe('SUCCEEDED');
  expect(run.output).toEqual({ sku: 'PREMIUM-1', totalCents: 7500 });
});

it('retries the price step when the worker answers a retryable failure, on its own schedule', async () => {
  let calls = 0;
  const flaky = (input: unknown) => {
    calls += 1;
    if (calls === 1) throw workerFailure('PRICING_BUSY');
    return price(input as QuoteRequest);
  };
  const run = await runPipeline(quotes, { sku: 'a', quantity: 1 }, { remote: { price: flaky } });
  expect(run.status).toBe('SUCCEEDED');
  expect(run.attempts.filter((a) => a.step === 'price').map((a) => [a.errorCode ?? null, a.delayMs ?? null])).toEqual([
    ['PRICING_BUSY', 1000],
    [null, null],
  ]);
});
