/**
 * `pipeline-orchestrator/testing`: what a pipeline's authors test it with (docs/testing-pipelines.md).
 *
 * - `runPipeline(pipeline, input, { remote })`: the pipeline's steps in memory with the
 *   engine's retry and failure rules, in milliseconds, no servers;
 * - `stepContext()`: a StepContext to call one operator directly;
 * - `startTestEngine({ pipelines })`: the real engine on Temporal's time-skipping test server
 *   and PGlite, so a retry schedule of minutes runs in seconds;
 * - `startStubWorker(handler)`: a REST worker stand-in on a port the OS picks, for engine tests;
 * - `workerFailure(...)`, `workerDeadline()`, `workerAnswerNotJson()`: what a stand-in for a remote step throws to
 *   answer as a failing worker, a worker that never answered, or one whose answer is not JSON.
 */
import { RemoteFailureError, RemoteOutcomeUnknownError } from '../transports/remote';

export { runPipeline, stepContext, type InputOf, type MemoryAttempt, type MemoryRun, type MemoryRunOptions, type OutputOf } from './memory';
export { startTestEngine, type EngineOutcome, type StartedExecution, type StartOptions, type TestEngine, type TestEngineOptions } from './engine';
export { startStubWorker, type StubCall, type StubWorker } from './stub-worker';

/**
 * The failure a remote worker answers, for a stand-in of a REST or gRPC step: `code` becomes
 * the step's errorCode, `retryable` (default true, like a 503) decides whether it is retried.
 */
export function workerFailure(code: string, options: { retryable?: boolean; message?: string; retryAfterMs?: number } = {}): Error {
  return new RemoteFailureError(options.message ?? `worker answered ${code}`, code, options.retryable ?? true, null, options.retryAfterMs ?? null);
}

/**
 * A remote step's call that passed its deadline, for a stand-in: the execution parks as
 * REMOTE_OUTCOME_UNKNOWN (never retried on its own), as when a real worker does not answer.
 */
export function workerDeadline(deadlineMs = 30_000): Error {
  return new RemoteOutcomeUnknownError('REST', 'stand-in', deadlineMs, deadlineMs, new Date());
}

/** A worker's 2xx answer whose body is not JSON, for a stand-in: the step ends non_retryable with INVALID_WORKER_RESPONSE. */
export function workerAnswerNotJson(): Error {
  return new RemoteFailureError('worker answered 200 with a body that is not JSON', 'INVALID_WORKER_RESPONSE', false, null);
}
