/**
 * The invoices pipeline in memory: every step through the engine's own retry and failure
 * rules, the render worker stood in for, no Temporal and no Postgres. Uses only the public
 * modules (`pipeline-orchestrator`, `pipeline-orchestrator/testing`).
 */
import { runPipeline, stepContext, workerFailure } from 'pipeline-orchestrator/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createInvoicesPipeline, validateInvoice, type Sent } from '../pipeline';
import { render } from '../render';
import { fakes, invoice } from './fakes';

describe('invoices, in memory', () => {
  it('prices, reserves, renders and sends; the zero-quantity line is rejected alone', async () => {
    const { deps, calls } = fakes();
    const run = await runPipeline(createInvoicesPipeline(deps), invoice, { remote: { render } });
    expect(run.status).toBe('SUCCEEDED');
    expectTypeOf(run.output).toEqualTypeOf<Sent | undefined>();
    expect(run.output).toEqual({ invoiceId: 'inv-1', messageId: 'msg-acme' });
    expect(run.rejects).toEqual([expect.objectContaining({ step: 'validate', itemKey: 'B-2', errorCode: 'QUANTITY_NOT_POSITIVE' })]);
    expect(run.effects).toEqual({ reserve: 'SUCCEEDED', send: 'SUCCEEDED' });
    // Each Command call carries its transition's idempotency key, once.
    expect(calls).toEqual({ reserve: ['test/memory-1:1:1'], send: ['test/memory-1:3:1'] });
  });

  it('retries a reservation the inventory refused four times on the step’s own schedule, each with a new key', async () => {
    const { deps, calls } = fakes({ reserveFailures: 4 });
    const run = await runPipeline(createInvoicesPipeline(deps), invoice, { remote: { render } });
    expect(run.status).toBe('SUCCEEDED');
    const reserve = run.attempts.filter((attempt) => attempt.step === 'reserve');
    expect(reserve.map((attempt) => [attempt.outcome, attempt.errorCode, attempt.delayMs])).toEqual([
      ['retry', 'INVENTORY_DOWN', 30_000],
      ['retry', 'INVENTORY_DOWN', 60_000],
      ['retry', 'INVENTORY_DOWN', 120_000],
      ['retry', 'INVENTORY_DOWN', 240_000],
      ['succeeded', undefined, undefined],
    ]);
    expect(new Set(calls.reserve).size).toBe(5);
  });

  it('ends retry_exhausted after the fifth refusal, the reservation effect left FAILED_RETRYABLE and nothing sent', async () => {
    const { deps, calls } = fakes({ reserveFailures: 99 });
    const run = await runPipeline(createInvoicesPipeline(deps), invoice, { remote: { render } });
    expect(run).toMatchObject({ status: 'FAILED', failedStep: 'reserve', terminalReason: 'retry_exhausted', errorCode: 'INVENTORY_DOWN', retriesObserved: 4 });
    expect(run.effects).toEqual({ reserve: 'FAILED_RETRYABLE' });
    expect(calls.send).toEqual([]);
  });

  it('fails an invoice without lines at once, non_retryable', async () => {
    const run = await runPipeline(createInvoicesPipeline(fakes().deps), { ...invoice, lines: [] }, { remote: { render } });
    expect(run).toMatchObject({ status: 'FAILED', failedStep: 'validate', terminalReason: 'non_retryable', errorCode: 'INVOICE_EMPTY' });
    expect(run.attempts).toHaveLength(1);
  });

  it('takes the render worker’s non-retryable answer as final', async () => {
    const run = await runPipeline(createInvoicesPipeline(fakes().deps), invoice, {
      remote: {
        render: () => {
          throw workerFailure('TEMPLATE_MISSING', { retryable: false });
        },
      },
    });
    expect(run).toMatchObject({ status: 'FAILED', failedStep: 'render', terminalReason: 'non_retryable', errorCode: 'TEMPLATE_MISSING' });
    expect(run.effects).toEqual({ reserve: 'SUCCEEDED' });
  });

  it('does not retry a programming error: a worker answer without the customer breaks send once, as OPERATOR_BUG', async () => {
    const { deps, calls } = fakes();
    const run = await runPipeline(createInvoicesPipeline(deps), invoice, { remote: { render: (input) => ({ ...render(input), customer: undefined }) } });
    expect(run).toMatchObject({
      status: 'FAILED',
      failedStep: 'send',
      terminalReason: 'non_retryable',
      errorCode: 'OPERATOR_BUG',
      errorMessage: expect.stringMatching(/^TypeError: /),
    });
    expect(calls.send).toHaveLength(1);
    expect(run.effects.send).toBe('FAILED_TERMINAL');
  });

  it('runs one operator on its own with a step context', async () => {
    const ctx = stepContext({ stepName: 'validate' });
    const valid = await validateInvoice(invoice, ctx);
    expect(valid.totalCents).toBe(2100);
    expect(ctx.rejected).toEqual([expect.objectContaining({ itemKey: 'B-2', errorCode: 'QUANTITY_NOT_POSITIVE' })]);
  });
});
