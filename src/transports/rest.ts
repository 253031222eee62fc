/**
 * The REST transport: POST the segment input as JSON to the step's URL, with the
 * tenant-qualified transition identity as `Idempotency-Key` and the ids, attempt, step
 * and deadline as headers (transitionHeaders). `X-Transition-In-Progress: true` on any
 * status is an in-progress answer. 2xx → the JSON body is the step output (empty → null).
 * 408, 425, 429, 5xx and unreachable workers are retryable; other 4xx are not. The
 * errorCode carries the status (`HTTP_503`) unless the worker's `application/problem+json`
 * body names its own code, detail and retryability. `Retry-After` is honoured (capped by
 * the retry policy's max-backoff). docs/transition-workers.md is the contract.
 */
import { IN_PROGRESS_HEADER, PLATFORM_HEADER, transitionHeaders } from '@pipeline-orchestrator/worker-kit/protocol';
import {
  DeliveryUnconfirmedError,
  RemoteFailureError,
  TransitionInProgressError,
  withDeadline,
  WorkerUnreachableError,
  type RemoteCallContext,
} from './remote';
import { restProblem } from './worker-problem';
import { injectTraceContext } from '../trace-context';

export { PLATFORM_HEADER };

/**
 * Socket errors that can happen after the request went out (the worker may have taken the
 * call): a reset or close of an open connection, a timeout waiting for the answer. Anything
 * else (refused, DNS, unreachable, TLS) failed before a byte reached the worker.
 */
const AFTER_SENDING = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const RETRYABLE_STATUS = new Set([408, 425, 429]);

export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export async function callRest(url: string, input: unknown, deadlineMs: number, ctx: RemoteCallContext): Promise<unknown> {
  let headers: Headers;
  try {
    headers = new Headers({ 'content-type': 'application/json', accept: 'application/json, application/problem+json', ...transitionHeaders(ctx, deadlineMs) });
  } catch {
    // Nothing was sent: a local encoding problem (a correlationId stored before it was validated), not the network.
    throw new RemoteFailureError(
      `the call to ${url} was not sent: a header value (correlationId) cannot be encoded in HTTP`,
      'INVALID_REQUEST_HEADER',
      false,
      null,
    );
  }
  // The step's trace continues in the transition worker (W3C traceparent); nothing when tracing is off.
  injectTraceContext((key, value) => headers.set(key, value));
  return withDeadline('REST', url, deadlineMs, ctx, async (signal) => {
    let response: Response;
    try {
      response = await fetch(url, { method: 'POST', signal, headers, body: JSON.stringify(input ?? null) });
    } catch (err) {
      if (signal.aborted) throw err;
      const cause = (err as { cause?: { code?: string } }).cause?.code;
      if (cause && AFTER_SENDING.has(cause)) throw new DeliveryUnconfirmedError('REST', url, null, cause);
      throw new WorkerUnreachableError(
        `REST worker at ${url} unreachable (${cause ?? 'network error'})`,
        cause === 'ECONNREFUSED' ? 'CONNECTION_REFUSED' : 'NETWORK_ERROR',
        'REST',
        url,
      );
    }
    const platform = response.headers.get(PLATFORM_HEADER);
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      if (signal.aborted) throw err;
      // It answered a status, so it took the call: its answer is lost, not its outcome.
      throw new DeliveryUnconfirmedError('REST', url, platform, `answer broken off after status ${response.status}`);
    }
    return interpretRestAnswer(url, response, text);
  });
}

/**
 * What the service makes of a worker's HTTP answer (the conformance checker asks the same):
 * the step output, or the failure thrown — in progress, INVALID_WORKER_RESPONSE, the worker's
 * problem, or `HTTP_<status>`.
 */
export function interpretRestAnswer(url: string, response: { status: number; headers: Headers }, text: string): unknown {
  const platform = response.headers.get(PLATFORM_HEADER);
  const ok = response.status >= 200 && response.status < 300;
  // Honoured on any status: a worker may say 202 "accepted, still working" as well as 425.
  if (response.headers.get(IN_PROGRESS_HEADER) === 'true')
    throw new TransitionInProgressError('REST', url, platform, parseRetryAfter(response.headers.get('retry-after')));
  if (ok) {
    try {
      return text === '' ? null : JSON.parse(text);
    } catch {
      throw new RemoteFailureError(
        `REST worker at ${url} answered ${response.status} with a body that is not JSON`,
        'INVALID_WORKER_RESPONSE',
        false,
        platform,
      );
    }
  }
  const problem = restProblem(response.headers.get('content-type'), text);
  const retryable = problem?.retryable ?? (RETRYABLE_STATUS.has(response.status) || response.status >= 500);
  throw new RemoteFailureError(
    `REST worker at ${url} answered ${response.status}${problem?.detail ? `: ${problem.detail}` : ''}`,
    problem?.code ?? `HTTP_${response.status}`,
    retryable,
    platform,
    retryable ? parseRetryAfter(response.headers.get('retry-after')) : null,
  );
}
