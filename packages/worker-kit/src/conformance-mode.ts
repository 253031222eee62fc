/**
 * Conformance mode: the input shape the orchestrator's checker (`pipeline-worker-check`)
 * sends and what a worker under check answers (docs/transition-workers.md, "Conformance
 * mode"). A worker honours it only when its operator turned it on (a test deployment): it
 * lets a caller make the handler sleep or fail. `withConformanceMode` wraps a kit handler
 * with it.
 */
import { randomUUID } from 'node:crypto';
import { TransitionRejectedError, TransitionRetryableError } from './delivery.js';

/** `{ "conformance": { echo?, sleepMs?, fail? } }` */
export interface ConformanceInput {
  conformance: {
    /** any JSON value, answered back as `echo` */
    echo?: unknown;
    /** sleep this long (0–60,000 ms) before answering */
    sleepMs?: number;
    /** fail with this problem instead of answering (after the sleep) */
    fail?: { status: number; code: string; detail: string; retryable: boolean };
  };
}

/** A conformance answer: the echo, and an id unique to this run of the handler (a replay carries the stored one). */
export interface ConformanceOutput {
  echo: unknown;
  run: string;
  /** optional: the trace id of the `traceparent` the worker continued */
  traceId?: string;
}

export function isConformanceInput(input: unknown): input is ConformanceInput {
  const value = (input as { conformance?: unknown } | null)?.conformance;
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Wraps a kit handler: conformance inputs are served here, everything else goes to
 * `handler`. Turn it on only where a caller may make the worker sleep or fail (a test
 * deployment, behind a flag of its own).
 */
export function withConformanceMode<C>(handler: (input: unknown, call: C) => Promise<unknown>): (input: unknown, call: C) => Promise<unknown> {
  return async (input, call) => {
    if (!isConformanceInput(input)) return handler(input, call);
    const { echo = null, sleepMs = 0, fail } = input.conformance;
    if (sleepMs > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(60_000, sleepMs)));
    if (fail) {
      if (fail.retryable) throw new TransitionRetryableError(fail.detail, fail.code);
      throw new TransitionRejectedError(fail.detail, fail.status, fail.code);
    }
    return { echo, run: randomUUID() } satisfies ConformanceOutput;
  };
}
