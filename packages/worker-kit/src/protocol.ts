/**
 * The wire contract's names and the idempotency key, as a worker reads them
 * (docs/transition-workers.md in the orchestrator's repository is the whole contract).
 * The kit keeps its own copy so it imports nothing from the orchestrator; a test there
 * holds these to the orchestrator's own values.
 */

/** The worker reports its platform in this response header (gRPC: metadata entry), and from there in DLQ envelopes. */
export const PLATFORM_HEADER = 'x-transition-worker-platform';
/** `true` on an answer that means "the same transition is still being handled": delivered again, no attempt consumed. */
export const IN_PROGRESS_HEADER = 'x-transition-in-progress';
/** The REST error body's media type (RFC 9457 problem details with `code`, `detail`, `retryable`). */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';
/** gRPC: metadata that marks a status as the contract's problem, its code and whether a retry may help. */
export const PROBLEM_METADATA = 'x-transition-problem';
export const PROBLEM_CODE_METADATA = 'x-transition-problem-code';
export const PROBLEM_RETRYABLE_METADATA = 'x-transition-problem-retryable';

/** 1–128 chars of [A-Za-z0-9._-], starting alphanumeric: a tenant or execution id. */
const ID_SOURCE = '[A-Za-z0-9][A-Za-z0-9._-]{0,127}';
/** `{tenantId}/{executionId}:{stepIndex}:{attempt}` */
export const IDEMPOTENCY_KEY_PATTERN = new RegExp(`^(${ID_SOURCE})/((${ID_SOURCE}):(\\d{1,9}):(\\d{1,9}))$`);

export interface ParsedIdempotencyKey {
  tenantId: string;
  executionId: string;
  /** the transition identity `executionId:stepIndex:attempt` (unique within the tenant only) */
  transitionKey: string;
  stepIndex: number;
  attempt: number;
}

/** Splits a tenant-qualified idempotency key; null when it is not one. */
export function parseIdempotencyKey(key: string): ParsedIdempotencyKey | null {
  const match = IDEMPOTENCY_KEY_PATTERN.exec(key);
  if (!match) return null;
  return { tenantId: match[1], transitionKey: match[2], executionId: match[3], stepIndex: Number(match[4]), attempt: Number(match[5]) };
}
