/**
 * The worker's own word on a failure: a REST `application/problem+json` body or gRPC
 * `x-transition-problem*` metadata with `code`, `detail` and `retryable`. It becomes the
 * step's errorCode / errorMessage and, where given, its retryability. The code is a metric
 * label and the message lands in DLQ envelopes, so both are bounded; a code the service
 * assigns itself (or a malformed one) is ignored so a worker cannot impersonate the service.
 */

/** The media type that marks a REST error body as the worker's problem (RFC 9457). */
export const PROBLEM_MEDIA_TYPE = 'application/problem+json';
/** gRPC: metadata `x-transition-problem: true` marks the status details as the worker's problem detail. */
export const PROBLEM_METADATA = 'x-transition-problem';
export const PROBLEM_CODE_METADATA = 'x-transition-problem-code';
export const PROBLEM_RETRYABLE_METADATA = 'x-transition-problem-retryable';

/** Error bodies over this size are not parsed (a problem document is small). */
export const MAX_PROBLEM_BYTES = 16 * 1024;
/** How much of the worker's `detail` reaches the step's errorMessage. */
export const MAX_DETAIL_CHARS = 300;

const CODE = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * Codes the service assigns to remote steps by itself. A worker's problem carrying one
 * of them keeps the transport's own code (`HTTP_<status>`, `GRPC_<STATUS>`).
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
const RESERVED = new Set<string>(SERVICE_REMOTE_CODES);

export interface WorkerProblem {
  /** a usable code, or null (the transport's own code stands) */
  code: string | null;
  /** bounded, control characters replaced; null when the worker gave none */
  detail: string | null;
  /** the worker's retryability, or null (the status decides) */
  retryable: boolean | null;
}

/** The code a worker may set: UPPER_SNAKE, at most 64 characters, not one the service assigns. */
export function usableProblemCode(value: unknown): string | null {
  if (typeof value !== 'string' || !CODE.test(value)) return null;
  if (RESERVED.has(value) || /^(HTTP|GRPC)_/.test(value)) return null;
  return value;
}

export function boundedDetail(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const flat = value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  if (flat === '') return null;
  return flat.length > MAX_DETAIL_CHARS ? `${flat.slice(0, MAX_DETAIL_CHARS - 1)}…` : flat;
}

/** A REST error answer's problem, or null when its body is not `application/problem+json` (or not a JSON object). */
export function restProblem(contentType: string | null, body: string): WorkerProblem | null {
  if (!contentType || contentType.split(';')[0].trim().toLowerCase() !== PROBLEM_MEDIA_TYPE) return null;
  if (body.length > MAX_PROBLEM_BYTES) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
  const problem = parsed as { code?: unknown; detail?: unknown; title?: unknown; retryable?: unknown };
  return {
    code: usableProblemCode(problem.code),
    detail: boundedDetail(problem.detail) ?? boundedDetail(problem.title),
    retryable: typeof problem.retryable === 'boolean' ? problem.retryable : null,
  };
}

/** A gRPC error's problem (marked by `x-transition-problem: true`), or null. */
export function grpcProblem(get: (key: string) => string | undefined, details: string | undefined): WorkerProblem | null {
  if (get(PROBLEM_METADATA) !== 'true') return null;
  const retryable = get(PROBLEM_RETRYABLE_METADATA);
  return {
    code: usableProblemCode(get(PROBLEM_CODE_METADATA)),
    detail: boundedDetail(details),
    retryable: retryable === 'true' ? true : retryable === 'false' ? false : null,
  };
}
