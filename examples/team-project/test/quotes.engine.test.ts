/** The quotes pipeline on the real engine (Temporal's time-skipping test server and PGlite), its REST step served by a stub worker. */
import { startStubWorker, startTestEngine, type StubWorker, type TestEngine } from 'pipeline-orchestrator/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { price } from '../src/pricing.js';
import { createQuotesPipeline, type QuoteRequest } from '../src/quotes.js';

let worker: StubWorker;
let engine: TestEngine;

beforeAll(async () => {
  worker = await startStubWorker((input: QuoteRequest) => price(input));
  engine = await startTestEngine({ pipelines: [createQuotesPipeline(worker.url)] });
});

afterAll(async () => {
  await engine?.stop();
  await worker?.stop();
});

it('runs a quote to SUCCEEDED through the worker, and the API answers its result', async () => {
  const execution = await engine.start('quotes', { sku: 'premium-2', quantity: 2 }, { executionId: 'q-1' });
  const { record, output } = await engine.result(execution);
  expect(record.status).toBe('SUCCEEDED');
  expect(output).toEqual({ sku: 'PREMIUM-2', totalCents: 5000 });
  expect(worker.calls).toHaveLength(1);
  const answer = await engine.request('GET', '/api/tenants/test/executions/q-1/result');
  expect(answer.status).toBe(200);
});
