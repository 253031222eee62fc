/**
 * What the API shows of stored objects: metadata only. Segment inputs and effect
 * results are payload data and never leave the store through a response.
 */
import type { CommandEffect } from '../store/effect-store';
import type { ExecutionRecord } from '../store/execution-store';

export function recordView(record: ExecutionRecord) {
  const { segmentInput, ...rest } = record;
  return { ...rest, segmentInputBytes: segmentInput == null ? 0 : Buffer.byteLength(JSON.stringify(segmentInput)) };
}

export function effectView(effect: CommandEffect) {
  const { result, ...rest } = effect;
  return { ...rest, hasResult: result != null };
}

/**
 * What a `submit` token learns when its executionKey names an existing execution: that it
 * exists and under which id, nothing of its state (status, errors, runId are /admin's).
 */
export function existingExecutionView(record: ExecutionRecord) {
  return {
    tenantId: record.tenantId,
    executionId: record.executionId,
    executionKey: record.executionKey,
    pipeline: record.pipeline,
    existing: true as const,
    dispatch: 'existing' as const,
  };
}
