/**
 * What remote transition workers (REST, gRPC) share: the failure classes a call can end
 * in, and the deadline clock that logs `remote_transition_deadline_warning` once at 75%
 * of the deadline and, at the deadline, aborts the call as an outcome unknown.
 */
import type { Log } from '../log';
import type { RemoteTransport } from '../spec-words';

export type Protocol = RemoteTransport;

/** The caller deadline passed: the worker may or may not have applied the effect. */
export class RemoteOutcomeUnknownError extends Error {
  constructor(
    readonly protocol: Protocol,
    readonly target: string,
    readonly elapsedMs: number,
    readonly deadlineMs: number,
    readonly startedAt: Date,
  ) {
    super(`${protocol} call to ${target} passed its ${deadlineMs} ms deadline; outcome unknown`);
    this.name = 'RemoteOutcomeUnknownError';
  }
}

/** The worker answered with a failure, or could not be reached. */
export class RemoteFailureError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryable: boolean,
    readonly platform: string | null,
    /** the worker asked for this delay before a retry (Retry-After) */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
    this.name = 'RemoteFailureError';
  }
}

/**
 * Marks a worker's "still in progress" answer (REST header, gRPC metadata): the same
 * transition identity is being handled, or its outcome is being stored. Not a failed
 * attempt: the engine delivers the same identity again and commits no new attempt.
 */
export { IN_PROGRESS_HEADER } from '@pipeline-orchestrator/worker-kit/protocol';

/** The worker answered "in progress" for this transition identity (see IN_PROGRESS_HEADER). */
export class TransitionInProgressError extends RemoteFailureError {
  constructor(
    readonly protocol: Protocol,
    readonly target: string,
    platform: string | null,
    retryAfterMs: number | null,
    message = `${protocol} worker at ${target} is still handling this transition`,
    code = 'TRANSITION_IN_PROGRESS',
  ) {
    super(message, code, true, platform, retryAfterMs);
    this.name = 'TransitionInProgressError';
  }
}

/**
 * The call may have reached the worker, but no answer came back: the connection was reset or
 * closed after the request went out, or the answer broke off. Whether the handler ran cannot
 * be known, so this is not a failed attempt (a new attempt is a new key, and would run the
 * effect again): like "in progress", the same identity is delivered again, and once the
 * in-progress budget runs out the execution parks REMOTE_OUTCOME_UNKNOWN.
 */
export class DeliveryUnconfirmedError extends TransitionInProgressError {
  constructor(protocol: Protocol, target: string, platform: string | null, reason: string) {
    super(protocol, target, platform, null, `${protocol} call to ${target} got no answer (${reason}); it may have reached the worker`, 'DELIVERY_UNCONFIRMED');
    this.name = 'DeliveryUnconfirmedError';
  }
}

/**
 * The worker could not be reached and this delivery sent nothing (connection refused, no
 * route, DNS; gRPC UNAVAILABLE with no word from the server). It says nothing about an
 * earlier delivery of the same identity: only on the identity's very first send is it a
 * failed attempt. After one was sent, the engine delivers the same identity again
 * (docs/transition-workers.md, "A worker that died is not a worker that failed").
 */
export class WorkerUnreachableError extends RemoteFailureError {
  constructor(
    message: string,
    code: string,
    readonly protocol: Protocol,
    readonly target: string,
  ) {
    super(message, code, true, null);
    this.name = 'WorkerUnreachableError';
  }
}

export interface RemoteCallContext {
  tenantId: string;
  executionId: string;
  correlationId: string | null;
  attempt: number;
  transitionKey: string;
  /** the tenant-qualified key sent to the worker (`Idempotency-Key`, `idempotency-key`) */
  idempotencyKey: string;
  /** the step's name and its pipeline, sent as `X-Transition-Step` / `X-Pipeline` */
  stepName?: string;
  pipeline?: string;
  signal: AbortSignal;
  log: Log;
  onDeadlineWarning?: (protocol: Protocol) => void;
}

/**
 * What every call tells the worker besides its input, as HTTP headers and gRPC metadata
 * of the same (lower-case) names: the wire protocol's, owned by the kit (its protocol module).
 * docs/transition-workers.md is the contract; docs/worker-api.openapi.json its REST form.
 */
export { transitionHeaders, type TransitionIds } from '@pipeline-orchestrator/worker-kit/protocol';

/**
 * Runs `call` under the deadline. `call` gets an AbortSignal that fires at the deadline
 * (or when the activity is cancelled). At the deadline the result is a
 * RemoteOutcomeUnknownError, whatever the call does afterwards.
 */
export async function withDeadline<T>(
  protocol: Protocol,
  target: string,
  deadlineMs: number,
  ctx: RemoteCallContext,
  call: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const startedAt = new Date();
  const started = performance.now();
  const controller = new AbortController();
  const onCancel = () => controller.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onCancel, { once: true });
  const fields = {
    tenantId: ctx.tenantId,
    executionId: ctx.executionId,
    correlationId: ctx.correlationId,
    attempt: ctx.attempt,
    transitionKey: ctx.transitionKey,
    protocol,
    target,
    deadlineMs,
  };
  const warning = setTimeout(
    () => {
      // Elapsed transport time only; not a diagnosis of a stalled worker.
      ctx.log.warn({ event: 'remote_transition_deadline_warning', ...fields, elapsedMs: Math.round(performance.now() - started) });
      ctx.onDeadlineWarning?.(protocol);
    },
    Math.floor(deadlineMs * 0.75),
  );
  let expire: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    expire = setTimeout(() => {
      // libuv timers run on a millisecond loop clock and may fire a hair before performance.now() says so.
      const elapsed = Math.max(deadlineMs, Math.round(performance.now() - started));
      const error = new RemoteOutcomeUnknownError(protocol, target, elapsed, deadlineMs, startedAt);
      controller.abort(error);
      reject(error);
    }, deadlineMs);
  });
  try {
    return await Promise.race([call(controller.signal), expired]);
  } catch (err) {
    if (controller.signal.reason instanceof RemoteOutcomeUnknownError) throw controller.signal.reason;
    throw err;
  } finally {
    clearTimeout(warning);
    clearTimeout(expire);
    ctx.signal.removeEventListener('abort', onCancel);
  }
}
