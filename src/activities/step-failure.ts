/**
 * How an operator's throw (or its result) maps to a failure class: retryable or not,
 * a bounded error code (safe as a metric label), a message without payload, and the
 * Command effect status it leaves.
 */
import { errorMessage } from '../errors';
import { NonRetryableError, UserActionRequiredError, type PipelineDefinition, type StepDefinition } from '../pipeline/define';
import { retryDelayMs, type RetryPolicy } from '../retry';
import type { TerminalReason } from '../spec-words';
import type { EffectStatus } from '../store/execution-store';
import { RemoteFailureError, TransitionInProgressError } from '../transports/remote';

export interface StepFailure {
  retryable: boolean;
  errorCode: string;
  errorMessage: string;
  /** effect status when the failure is final for this attempt (retryable ones become FAILED_RETRYABLE) */
  terminalEffectStatus: EffectStatus;
  /** a remote worker asked for this delay before the retry */
  retryAfterMs?: number | null;
  /** the remote worker's platform, when it said */
  platform?: string | null;
  /** the worker is still handling this very identity: not a failed attempt, deliver it again */
  inProgress?: boolean;
}

const CODE = /^[A-Z][A-Z0-9_]{0,63}$/;
const MAX_MESSAGE = 500;

/** The step's own deadline passed; the operator's signal was aborted. Retryable. */
export class StepTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`step deadline of ${timeoutMs} ms passed`);
    this.name = 'StepTimeoutError';
  }
}

/** The operator returned something JSON cannot carry to the next step. Not retryable. */
export class OutputNotSerializableError extends NonRetryableError {
  constructor(detail: string) {
    super(`operator output is not JSON-serialisable: ${detail}`, 'OPERATOR_OUTPUT_NOT_SERIALIZABLE');
  }
}

/**
 * Programming errors: a retry runs the same code on the same input and throws again, so by
 * default they end the step `non_retryable` with code OPERATOR_BUG (a pipeline or a step may
 * set its own list, `nonRetryableErrorTypes`, matched against `err.name`).
 */
export const DEFAULT_NON_RETRYABLE_ERROR_TYPES: readonly string[] = ['TypeError', 'ReferenceError', 'SyntaxError', 'RangeError'];

/** The error names a step never retries: its own list, else its pipeline's, else the default. */
export function nonRetryableErrorTypesOf(
  step: Pick<StepDefinition, 'nonRetryableErrorTypes'>,
  pipeline?: Pick<PipelineDefinition, 'nonRetryableErrorTypes'>,
): readonly string[] {
  return step.nonRetryableErrorTypes ?? pipeline?.nonRetryableErrorTypes ?? DEFAULT_NON_RETRYABLE_ERROR_TYPES;
}

export interface ClassifyOptions {
  /** error names that end the step non_retryable as OPERATOR_BUG; default DEFAULT_NON_RETRYABLE_ERROR_TYPES */
  nonRetryableErrorTypes?: readonly string[];
}

function isProgrammingError(err: unknown, types: readonly string[]): boolean {
  const name = (err as { name?: unknown } | null)?.name;
  if (typeof name !== 'string' || !types.includes(name)) return false;
  // fetch() reports an unreachable dependency as TypeError('fetch failed') with the system error
  // (ECONNREFUSED, ENOTFOUND…) as its cause: that is a dependency to wait for, not a bug.
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return (err as Error).message !== 'fetch failed' && typeof cause?.code !== 'string';
}

export function classifyFailure(err: unknown, options: ClassifyOptions = {}): StepFailure {
  const message = errorMessage(err).slice(0, MAX_MESSAGE);
  if (err instanceof UserActionRequiredError) {
    return { retryable: false, errorCode: err.code, errorMessage: message, terminalEffectStatus: 'USER_ACTION_REQUIRED' };
  }
  if (err instanceof NonRetryableError) {
    return { retryable: false, errorCode: CODE.test(err.code) ? err.code : 'NON_RETRYABLE', errorMessage: message, terminalEffectStatus: 'FAILED_TERMINAL' };
  }
  if (err instanceof TransitionInProgressError) {
    return {
      retryable: true,
      inProgress: true,
      errorCode: err.code,
      errorMessage: message,
      terminalEffectStatus: 'IN_FLIGHT',
      retryAfterMs: err.retryAfterMs,
      platform: err.platform,
    };
  }
  if (err instanceof RemoteFailureError) {
    return {
      retryable: err.retryable,
      errorCode: err.code,
      errorMessage: message,
      terminalEffectStatus: err.retryable ? 'FAILED_RETRYABLE' : 'FAILED_TERMINAL',
      retryAfterMs: err.retryAfterMs,
      platform: err.platform,
    };
  }
  if (err instanceof StepTimeoutError) {
    return { retryable: true, errorCode: 'STEP_TIMEOUT', errorMessage: message, terminalEffectStatus: 'FAILED_RETRYABLE' };
  }
  if (isProgrammingError(err, options.nonRetryableErrorTypes ?? DEFAULT_NON_RETRYABLE_ERROR_TYPES)) {
    return {
      retryable: false,
      errorCode: 'OPERATOR_BUG',
      errorMessage: `${(err as Error).name}: ${message}`.slice(0, MAX_MESSAGE),
      terminalEffectStatus: 'FAILED_TERMINAL',
    };
  }
  const code = (err as { code?: unknown })?.code;
  return {
    retryable: true,
    errorCode: typeof code === 'string' && CODE.test(code) ? code : 'OPERATOR_ERROR',
    errorMessage: message,
    terminalEffectStatus: 'FAILED_RETRYABLE',
  };
}

/** What the engine does with a classified failure of an attempt. */
export type FailureDecision =
  /** the worker is still on this identity: deliver the same attempt again after `delayMs`; not a failed attempt */
  | { kind: 'in_progress'; delayMs: number }
  /** commit the retry intent and run the next attempt after `delayMs` */
  | { kind: 'retry'; delayMs: number }
  /** the execution ends FAILED with this terminal reason */
  | { kind: 'terminal'; terminalReason: TerminalReason };

/**
 * The retry rule, in one place for the engine and the testing kit: a retryable failure is
 * retried while fewer than `retry.limit` retries were observed, after the backoff delay (or
 * what the remote worker asked for, capped by `maxBackoffMs`); then `retry_exhausted`. A
 * failure that is not retryable is `non_retryable` at once.
 */
export function decideFailure(failure: StepFailure, retriesObserved: number, retry: RetryPolicy, random?: () => number): FailureDecision {
  if (failure.inProgress) return { kind: 'in_progress', delayMs: Math.min(retry.maxBackoffMs, failure.retryAfterMs ?? 1000) };
  if (failure.retryable && retriesObserved < retry.limit) {
    const delayMs = failure.retryAfterMs != null ? Math.min(retry.maxBackoffMs, failure.retryAfterMs) : retryDelayMs(retry, retriesObserved + 1, random);
    return { kind: 'retry', delayMs };
  }
  return { kind: 'terminal', terminalReason: failure.retryable ? 'retry_exhausted' : 'non_retryable' };
}

/**
 * Throws OutputNotSerializableError unless `value` survives JSON unchanged in kind.
 * `undefined` becomes null. The value itself is returned as is: the store and
 * Temporal's payload converter each serialise it once, the same way.
 */
export function toJsonOutput(value: unknown): unknown {
  if (value === undefined) return null;
  const seen = new Set<object>();
  const check = (v: unknown, path: string): void => {
    if (v === null || typeof v === 'string' || typeof v === 'boolean') return;
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new OutputNotSerializableError(`${path} is ${v}`);
      return;
    }
    if (typeof v === 'bigint' || typeof v === 'function' || typeof v === 'symbol' || typeof v === 'undefined') {
      throw new OutputNotSerializableError(`${path} is a ${typeof v}`);
    }
    if (typeof v === 'object') {
      if (seen.has(v)) throw new OutputNotSerializableError(`${path} is a circular reference`);
      seen.add(v);
      if (Array.isArray(v)) v.forEach((item, i) => check(item, `${path}[${i}]`));
      else if (v instanceof Date) return;
      else {
        const proto = Object.getPrototypeOf(v);
        if (proto !== Object.prototype && proto !== null) throw new OutputNotSerializableError(`${path} is a ${proto?.constructor?.name ?? 'class'} instance`);
        for (const [key, item] of Object.entries(v)) if (item !== undefined) check(item, `${path}.${key}`);
      }
      seen.delete(v);
    }
  };
  check(value, 'output');
  return value;
}
