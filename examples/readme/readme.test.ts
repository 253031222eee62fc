/**
 * The README's "Writing a pipeline" modules (examples/readme/, each the README's code block
 * byte for byte: test/lint/readme-code.test.ts) run as written, in memory through the public
 * testing module. test/e2e/pipelines-module.test.ts starts the service with pipelines.ts.
 */
import { runPipeline } from 'pipeline-orchestrator/testing';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { orders } from './orders';
import { greetings } from './pipelines';

describe('the README’s pipelines', () => {
  it('orders: validates, charges under the transition’s key, notifies with the same key', async () => {
    const run = await runPipeline(orders, { orderId: 'o-1', amount: 5 }, { tenantId: 'acme', executionId: 'order-1' });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.effects).toEqual({ charge: 'SUCCEEDED' });
    expect(run.output).toEqual({ notified: 'acme/order-1:2:1', chargeId: 'acme/order-1:1:1' });
    // Typed end to end: the README's headline pipeline is the chained builder, not the untyped definePipeline.
    expectTypeOf(run.output).toEqualTypeOf<{ notified: string; chargeId: string } | undefined>();
  });

  it('orders: an amount that is not positive fails at once, non_retryable INVALID_AMOUNT', async () => {
    const run = await runPipeline(orders, { orderId: 'o-2', amount: 0 });
    expect(run).toMatchObject({ status: 'FAILED', failedStep: 'validate', terminalReason: 'non_retryable', errorCode: 'INVALID_AMOUNT' });
    expect(run.attempts).toHaveLength(1);
  });

  it('greetings: greets, then shouts', async () => {
    const run = await runPipeline(greetings, { name: 'ada' });
    expect(run).toMatchObject({ status: 'SUCCEEDED', output: { greeting: 'HELLO ADA' } });
  });
});
