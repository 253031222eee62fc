/**
 * The spec's words, written once. Every status, terminal reason, transport and re-drive
 * mode the service stores, logs or answers with is one of these strings; TypeScript
 * unions derive from the arrays here, and the API's zod enums are built from the same
 * arrays (`z.enum(EXECUTION_STATUSES)`), so a new word is added in one place.
 *
 * Pure data: the workflow bundle may import it, so it imports nothing.
 */

/**
 * Statuses of an ExecutionRecord.
 * - `QUEUED`: admitted (or re-driven) and waiting for its run's first step
 * - `RUNNING`: a run is working on it
 * - `SUCCEEDED`: every step committed its success
 * - `FAILED`: a step ended terminally; the DLQ holds its envelope
 * - `REMOTE_OUTCOME_UNKNOWN`: a REST/gRPC call passed its deadline; parked, no retry, no DLQ entry
 */
export const EXECUTION_STATUSES = ['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];

/** Statuses an execution ends a run in without succeeding. */
export const TERMINAL_FAILURE_STATUSES = ['FAILED', 'REMOTE_OUTCOME_UNKNOWN'] as const satisfies readonly ExecutionStatus[];
export type TerminalFailureStatus = (typeof TERMINAL_FAILURE_STATUSES)[number];

/**
 * Statuses of a Command step's effect (CommandEffectStore).
 * - `IN_FLIGHT`: claimed by a transition identity, the operator is (or was) running
 * - `SUCCEEDED`: the effect happened; its result is reused, never invoked again
 * - `FAILED_RETRYABLE`: failed safely; the next attempt may claim it
 * - `FAILED_TERMINAL`: failed for good
 * - `AMBIGUOUS`: the remote call's outcome is unknown
 * - `USER_ACTION_REQUIRED`: a person must act before anything else is tried
 * Only `FAILED_RETRYABLE` (and a redelivered `IN_FLIGHT` claim) is ever redispatched.
 */
export const EFFECT_STATUSES = ['SUCCEEDED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL', 'IN_FLIGHT', 'AMBIGUOUS', 'USER_ACTION_REQUIRED'] as const;
export type EffectStatus = (typeof EFFECT_STATUSES)[number];

/**
 * Why a FAILED execution failed, as its DLQ envelope says.
 * - `retry_exhausted`: a retryable failure used up its retry budget (also with a limit of 0)
 * - `non_retryable`: a failure no retry can fix
 */
export const TERMINAL_REASONS = ['retry_exhausted', 'non_retryable'] as const;
export type TerminalReason = (typeof TERMINAL_REASONS)[number];

/**
 * How a step's operator is reached.
 * - `LOCAL`: an in-process function
 * - `FUNCTION`: a Lambda-style function with an invocation context
 * - `REST`: an HTTP worker
 * - `GRPC`: a gRPC worker
 */
export const TRANSPORTS = ['LOCAL', 'FUNCTION', 'REST', 'GRPC'] as const;
export type Transport = (typeof TRANSPORTS)[number];
/** The transports whose call can pass its deadline with the outcome unknown. */
export const REMOTE_TRANSPORTS = ['REST', 'GRPC'] as const satisfies readonly Transport[];
export type RemoteTransport = (typeof REMOTE_TRANSPORTS)[number];

/**
 * What kind of re-drive admission decided on (the audit row's `mode`).
 * - `ORDINARY`: a QUEUED/RUNNING execution whose run is gone, resumed as it was
 * - `FAILED`: a FAILED execution re-driven with `allowFailed=true`
 * - `RETRY_FAILED_COMMAND`: a FAILED execution whose retained Command step is retried
 *   (`allowFailed=true`, `intent=RETRY_FAILED_COMMAND`)
 * - `REMOTE_OUTCOME_UNKNOWN`: a parked execution, after the operator confirmed the call made no effect
 */
export const REDRIVE_MODES = ['ORDINARY', 'FAILED', 'RETRY_FAILED_COMMAND', 'REMOTE_OUTCOME_UNKNOWN'] as const;
export type RedriveMode = (typeof REDRIVE_MODES)[number];

/**
 * Statuses of a bulk re-drive job.
 * - `RUNNING`: admitting its items at its pace
 * - `PAUSED`: paused by an operator or halted by a canary or `haltOn`; resumes on request
 * - `ABORTED`: stopped by an operator; the items not yet admitted stay unadmitted
 * - `COMPLETED`: every item admitted or skipped
 * - `FAILED`: its workflow could not go on (its tick failed past its bounded retry); `failureReason` says why
 */
export const REDRIVE_JOB_STATUSES = ['RUNNING', 'PAUSED', 'ABORTED', 'COMPLETED', 'FAILED'] as const;
export type RedriveJobStatus = (typeof REDRIVE_JOB_STATUSES)[number];

/**
 * The outcome of one committed step attempt in an execution's story (the attempt log).
 * - `SUCCEEDED`: the step committed its success
 * - `RETRY_SCHEDULED`: a retryable failure committed its retry intent
 * - `FAILED`, `REMOTE_OUTCOME_UNKNOWN`: the step ended the run in that status
 */
export const ATTEMPT_OUTCOMES = ['SUCCEEDED', 'RETRY_SCHEDULED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** The only value of a re-drive request's `intent`. */
export const REDRIVE_INTENTS = ['RETRY_FAILED_COMMAND'] as const;
export type RedriveIntent = (typeof REDRIVE_INTENTS)[number];

/** The only value of a re-drive request's `confirmedDisposition`: the operator checked the call made no effect. */
export const CONFIRMED_DISPOSITIONS = ['NOT_APPLIED'] as const;
export type ConfirmedDisposition = (typeof CONFIRMED_DISPOSITIONS)[number];

/**
 * Statuses of an execution that a run is still working on (or about to): a re-drive is
 * refused with EXECUTION_ACTIVE while a run is live, and a follower waits while the record is in one.
 */
export const ACTIVE_EXECUTION_STATUSES = ['QUEUED', 'RUNNING'] as const satisfies readonly ExecutionStatus[];

/**
 * What became of a Temporal start after the commit that admitted it.
 * - `started`: the workflow run is started
 * - `pending`: the start did not happen yet (Temporal slow or down); the sweeper starts it
 */
export const DISPATCH_OUTCOMES = ['started', 'pending'] as const;
export type DispatchOutcome = (typeof DISPATCH_OUTCOMES)[number];

/**
 * States of one item of a bulk re-drive job.
 * - `SELECTED`: chosen at creation, not yet processed
 * - `ADMITTED`: re-driven through the single re-drive's admission
 * - `SKIPPED`: refused by that admission (its code kept) or given up after repeated errors
 */
export const JOB_ITEM_STATES = ['SELECTED', 'ADMITTED', 'SKIPPED'] as const;
export type JobItemState = (typeof JOB_ITEM_STATES)[number];

/** A bulk job's control-log actions: an operator's `pause`, `resume`, `abort`; the system's own `halt` and `fail`. */
export const JOB_CONTROL_ACTIONS = ['pause', 'resume', 'abort', 'halt', 'fail'] as const;
export type JobControlAction = (typeof JOB_CONTROL_ACTIONS)[number];

/** Statuses of a published checkpoint in the outbox: `PENDING` until admitted as an execution, then `ADMITTED`. */
export const CHECKPOINT_STATUSES = ['PENDING', 'ADMITTED'] as const;
export type CheckpointStatus = (typeof CHECKPOINT_STATUSES)[number];

/** Whether `value` is one of `words` (narrows a string read from a row or a request). */
export function isOneOf<const T extends readonly string[]>(words: T, value: unknown): value is T[number] {
  return typeof value === 'string' && (words as readonly string[]).includes(value);
}
