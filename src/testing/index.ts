/**
 * `pipeline-orchestrator/testing`: what a pipeline's authors test it with (docs/testing-pipelines.md).
 *
 * - `runPipeline(pipeline, input, { remote })`: the pipeline's steps in memory with the
 *   engine's retry and failure rules, in milliseconds, no servers;
 * - `runPipeline(pipeline, fromFixture(file))`: a production failure (`pipeline-admin executions
 *   fixture <id>`) replayed from its failed step, so a fix is proven by a test that failed before it;
 * - `stepContext()`: a StepContext to call one operator directly;
 * - `startTestEngine({ pipelines })`: the real engine on Temporal's time-skipping test server
 *   and PGlite, so a retry schedule of minutes runs in seconds;
 * - `startStubWorker(handler)`: a REST worker stand-in on a port the OS picks, for engine tests;
 * - `workerFailure(...)`: what a stand-in for a remote step throws to answer as a failing worker.
 */
import { RemoteFailureError } from '../transports/remote';

export { runPipeline, stepContext, type InputOf, type MemoryAttempt, type MemoryRun, type MemoryRunOptions, type OutputOf } from './memory';
export { startTestEngine, type EngineOutcome, type StartOptions, type TestEngine, type TestEngineOptions } from './engine';
export { fromFixture, FixtureInput } from './fixture';
export type { ExecutionFixture } from '../repair/fixture';
export { startStubWorker, type StubCall, type StubWorker } from './stub-worker';

/**
 * The failure a remote worker answers, for a stand-in of a REST or gRPC step: `code` becomes
 * the step's errorCode, `retryable` (default true, like a 503) decides whether it is retried.
 */
export function workerFailure(code: string, options: { retryable?: boolean; message?: string; retryAfterMs?: number } = {}): Error {
  return new RemoteFailureError(options.message ?? `worker answered ${code}`, code, options.retryable ?? true, null, options.retryAfterMs ?? null);
}
