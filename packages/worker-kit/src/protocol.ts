/**
 * The worker wire protocol's one home (`@pipeline-orchestrator/worker-kit/protocol`): the headers
 * and gRPC metadata a call carries and an answer may carry, the problem's media type and
 * metadata, the codes only the service assigns, and the idempotency key. The kit's workers, the
 * orchestrator's transports and its conformance checker all import it; the proto is the kit's
 * `proto/transition_worker.proto`. docs/transition-workers.md (in the orchestrator's repository)
 * is the contract in prose; docs/worker-api.openapi.json its REST form, held to this module by
 * test/lint/worker-contract.test.ts.
 */

/** What every call tells the worker besides its input, as HTTP headers and gRPC metadata of the same (lower-case) names. */
export const REQUEST_HEADERS = {
  /** the tenant-qualified idempotency key `{tenantId}/{executionId}:{stepIndex}:{attempt}` */
  idempotencyKey: 'idempotency-key',
  /** the transition identity `{executionId}:{stepIndex}:{attempt}` (unique within the tenant only) */
  transitionKey: 'x-transition-key',
  tenantId: 'x-tenant-id',
  executionId: 'x-execution-id',
  attempt: 'x-transition-attempt',
  /** the caller's deadline, milliseconds from sending */
  deadlineMs: 'x-transition-deadline-ms',
  stepName: 'x-transition-step',
  pipeline: 'x-pipeline',
  correlationId: 'x-correlation-id',
} as const;

/** W3C trace context, sent when the service traces (a worker may continue the trace). */
export const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

/** The ids a call carries (`transitionHeaders`). */
export interface TransitionIds {
  idempotencyKey: string;
  transitionKey: string;
  tenantId: string;
  executionId: string;
  attempt: number;
  correlationId: string | null;
  stepName?: string;
  pipeline?: string;
}

/** The headers (gRPC: metadata) of a call with `ids` and a deadline of `deadlineMs` from sending. */
export function transitionHeaders(ids: TransitionIds, deadlineMs: number): Record<string, string> {
  return {
    [REQUEST_HEADERS.idempotencyKey]: ids.idempotencyKey,
    [REQUEST_HEADERS.transitionKey]: ids.transitionKey,
    [REQUEST_HEADERS.tenantId]: ids.tenantId,
    [REQUEST_HEADERS.executionId]: ids.executionId,
    [REQUEST_HEADERS.attempt]: String(ids.attempt),
    [REQUEST_HEADERS.deadlineMs]: String(deadlineMs),
    ...(ids.stepName ? { [REQUEST_HEADERS.stepName]: ids.stepName } : {}),
    ...(ids.pipeline ? { [REQUEST_HEADERS.pipeline]: ids.pipeline } : {}),
    ...(ids.correlationId ? { [REQUEST_HEADERS.correlationId]: ids.correlationId } : {}),
  };
}

/**
 * Codes the service assigns to remote steps by itself. A worker's problem carrying one of them
 * (or `HTTP_…`, `GRPC_…`) is not taken: the transport's own code stands.
 */
export const SERVICE_REMOTE_CODES = [
  'CONNECTION_REFUSED',
  'NETWORK_ERROR',
  'INVALID_WORKER_RESPONSE',
  'INVALID_REQUEST_HEADER',
  'INVALID_REQUEST_METADATA',
  'TRANSITION_IN_PROGRESS',
  'DELIVERY_UNCONFIRMED',
  'REMOTE_OUTCOME_UNKNOWN',
  'STEP_ABANDONED',
  'RUN_TERMINATED',
  'RUN_CANCELLED',
  'RUN_TIMED_OUT',
  'STEP_TIMEOUT',
  'PIPELINE_STEP_GONE',
  'RETRY_INTENT_NOT_A_COMMAND',
  'COMMAND_EFFECT_NOT_REDISPATCHABLE',
  'OPERATOR_ERROR',
  'NON_RETRYABLE',
] as const;

/** A problem code a worker may set: UPPER_SNAKE, at most 64 characters (and not one of SERVICE_REMOTE_CODES). */
export const PROBLEM_CODE_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;

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
