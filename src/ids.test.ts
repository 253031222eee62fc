import { describe, expect, it } from 'vitest';
import { idsOfWorkflowId, workflowIdFor } from './ids';

describe('workflowIdFor and idsOfWorkflowId', () => {
  it('read a pipeline run’s workflow id back into its ids, and nothing else', () => {
    expect(idsOfWorkflowId(workflowIdFor('acme', 'order-1'))).toEqual({ tenantId: 'acme', executionId: 'order-1' });
    for (const other of ['redrive-job/acme/j-1', 'pipeline/acme', 'pipeline/acme/order-1/x', 'bare-1']) expect(idsOfWorkflowId(other)).toBeUndefined();
  });
});
