// orders.ts
import { functionStep, localStep, NonRetryableError, pipeline } from 'pipeline-orchestrator';

// Your own types and clients; stand-ins here, so the module runs as it is.
interface Order {
  orderId: string;
  amount: number;
}
const payments = {
  charge: async (order: Order, options: { idempotencyKey: string; signal: AbortSignal }) => ({ orderId: order.orderId, chargeId: options.idempotencyKey }),
};
const notify = async (event: { chargeId: string }, key: string) => ({ notified: key, chargeId: event.chargeId });

// Each .step's input is typed from the step before: a mismatch fails tsc, naming the step.
export const orders = pipeline('orders', {
  version: 2, // the next number whenever steps are inserted, removed, renamed, reordered,
  //             change transport or Command flag (default 1); see below
  retry: { limit: 3 }, // overrides pipeline.defaults.* for this pipeline
})
  .step(
    localStep('validate', (order: Order) => {
      if (order.amount <= 0) throw new NonRetryableError('amount must be positive', 'INVALID_AMOUNT');
      return order; // becomes the next step's segment input (must be JSON)
    }),
  )
  .step(
    localStep(
      'charge',
      async (order, ctx) => {
        // ctx.idempotencyKey = "tenantId/executionId:stepIndex:attempt": the same on every
        // redelivery of this attempt, and never shared by two tenants that chose the same executionId
        return payments.charge(order, { idempotencyKey: ctx.idempotencyKey, signal: ctx.signal });
      },
      { command: true, retry: { limit: 5, waitMs: 2000 } },
    ),
  )
  .step(functionStep('notify', async (event, context) => notify(event, context.invocationId))); // invocationId: the same key

export default [orders];
