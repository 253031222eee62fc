/**
 * The worker's own word on a failure: a REST `application/problem+json` body or gRPC
 * `x-transition-problem*` metadata with `code`, `detail` and `retryable`. It becomes the
 * step's errorCode / errorMessage and, where given, its retryability. The code is a metric
 * label and the message lands in DLQ envelopes, so both are bounded; a code the service
 * assigns itself (or a malformed one) is ignored so a worker cannot impersonate the service.
 */

import {
  PROBLEM_CODE_PATTERN,
  PROBLEM_METADATA,
  PROBLEM_CODE_METADATA,
  PROBLEM_MEDIA_TYPE,
  PROBLEM_RETRYABLE_METADATA,
  SERVICE_REMOTE_CODES,
} from '@pipeline-orchestrator/worker-kit/protocol';

// The names are the wire protocol's, owned by the kit (its protocol module).
export { PROBLEM_CODE_METADATA, PROBLEM_MEDIA_TYPE, PROBLEM_METADATA, PROBLEM_RETRYABLE_METADATA, SERVICE_REMOTE_CODES };

/** Error bodies over this size are not parsed (a problem document is small). */
export const MAX_PROBLEM_BYTES = 16 * 1024;
/** How much of the worker's `detail` reaches the step's errorMessage. */
export const MAX_DETAIL_CHARS = 300;

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
  if (typeof value !== 'string' || !PROBLEM_CODE_PATTERN.test(value)) return null;
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
