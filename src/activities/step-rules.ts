/**
 * The rules of one step attempt, as pure functions: what the store says (the record, the
 * Command effect, what this run committed last) and what happened (the operator returned or
 * threw, the remote outcome is unknown, a commit matched no row) → what the engine does (run
 * the attempt as the committed attempt, answer a settled step, commit, retry with the intent,
 * park, refuse the run). No I/O here: the activity (step-attempt.ts, step-ending.ts) reads
 * the state, asks these functions, and applies the answer through the committer port
 * (step-committer.ts). The spec's crash matrix and Command dispatch table are their test
 * tables (step-rules.test.ts).
 */
import { transitionKey as makeTransitionKey } from '../ids';
import type { StepResolution } from '../pipeline/registry';
import type { RetryPolicy } from '../retry';
import type { TerminalReason, Transport } from '../spec-words';
import type { ClaimOutcome } from '../store/effect-store';
import type { EffectChange, ExecutionRecord, InProgressEvidence, RemoteCall, RunOutcome, TerminalFailure } from '../store/execution-store';
import type { Protocol } from '../transports/remote';
import type { StepRequest, StepResult, TerminalDetails } from '../workflows/types';
import { decideFailure, type StepFailure } from './step-failure';

/** A step Temporal gave up on, or a run it closed, whose record the engine ends FAILED. */
export interface AbandonRequest {
  tenantId: string;
  executionId: string;
  stepIndex: number;
  /** the step's name and transport from the run's plan; absent in runs from before versions */
  stepName?: string;
  transport?: Transport;
  reason: string;
  /**
   * The run's dispatch, when the given-up step was the run's first. A record still QUEUED for
   * it was never taken (say, every delivery met a worker behind a rollout): the run takes it
   * as its first step would have (`begin`, with its fences) and ends it FAILED, to the DLQ,
   * rather than leave it QUEUED with no run to carry it on.
   */
  dispatchId?: string;
}

// ---------------------------------------------------------------------------------------
// The record: whose it is, and what it says of this step

/**
 * Whether the record is this run's. A run's first step took it (`begin` wrote the run id),
 * so that step and every Temporal retry after it must find the run's own id. Only a record
 * from before run ids were kept has none while RUNNING. A run that finds another id, or a
 * QUEUED record, has been superseded or never owned it.
 */
export function ownsRecord(req: Pick<StepRequest, 'firstOfRun' | 'notFirstRun'>, record: ExecutionRecord, runId: string): boolean {
  if (record.runId === runId) return true;
  if (req.firstOfRun || req.notFirstRun) return false;
  return record.runId === null && record.status !== 'QUEUED';
}

/** The execution's record is gone (deleted under a running workflow): nothing to commit, the run ends. */
export function recordMissing(req: { executionId: string; stepIndex: number; attempt?: number }): TerminalDetails {
  return {
    status: 'FAILED',
    terminalReason: 'non_retryable',
    errorCode: 'EXECUTION_RECORD_MISSING',
    stepIndex: req.stepIndex,
    transitionKey: makeTransitionKey(req.executionId, req.stepIndex, req.attempt ?? 1),
  };
}

/** The terminal outcome already committed for this step, if any. */
export function committedTerminal(record: ExecutionRecord, stepIndex: number): TerminalDetails | undefined {
  if ((record.status === 'FAILED' || record.status === 'REMOTE_OUTCOME_UNKNOWN') && record.failedStepIndex === stepIndex) {
    return {
      status: record.status,
      terminalReason: record.terminalReason,
      errorCode: record.lastErrorCode ?? 'UNKNOWN',
      stepIndex,
      transitionKey: makeTransitionKey(record.executionId, stepIndex, record.attempt),
    };
  }
  return undefined;
}

/**
 * Whether this delivery reads (and begins) the record before it runs. Only a run's first step
 * or a Temporal retry can see a committed attempt the workflow does not know, so only those
 * read; so does a run that is not its start's first (a Reset), and a fast-path step that may
 * have run on a worker that died (a local activity re-run is at Temporal attempt 1 again).
 */
export function readsRecord(req: Pick<StepRequest, 'firstOfRun' | 'notFirstRun' | 'mayHaveRun'>, temporalAttempt: number): boolean {
  return Boolean(req.firstOfRun || req.notFirstRun || req.mayHaveRun) || temporalAttempt !== 1;
}

/** What the record says a delivery does, before the operator (`decideAttempt`) or after a commit matched no row (`decideLostCommit`). */
export type RecordDecision =
  /** the record is gone: the run ends with these details */
  | { kind: 'missing'; details: TerminalDetails }
  /** another run (or a re-drive) holds the record: the run is refused (see `decideRefusal`), nothing is committed */
  | { kind: 'not_owner'; record: ExecutionRecord }
  /** the step is settled already: answer this, run and commit nothing */
  | { kind: 'settled'; result: StepResult }
  /** the step already ended terminally: the run ends as committed */
  | { kind: 'terminal'; details: TerminalDetails; message: string }
  /** run the operator as this committed attempt */
  | { kind: 'run'; attempt: number }
  /** the record moved under the commit (another delivery committed a retry): Temporal tries again from the stored state */
  | { kind: 'moved'; message: string };

function alreadyTerminal(req: StepRequest, record: ExecutionRecord): RecordDecision | undefined {
  const details = committedTerminal(record, req.stepIndex);
  if (!details) return undefined;
  return { kind: 'terminal', details, message: `execution ${req.executionId} already ${record.status} at step ${req.stepIndex}` };
}

/**
 * The attempt a reading delivery runs as, from the record `begin` returned: a redelivery
 * after the step's commit finds it settled (a fast-path step, which may have committed
 * several, carries on from the record's step); a redelivery before it runs the stored attempt.
 */
export function decideAttempt(req: StepRequest, record: ExecutionRecord | null, runId: string): RecordDecision {
  if (!record) return { kind: 'missing', details: recordMissing(req) };
  // Before anything else: a record another run (or a re-drive) has taken tells this run nothing about its own step.
  if (!ownsRecord(req, record, runId)) return { kind: 'not_owner', record };
  if (record.currentStepIndex > req.stepIndex) {
    if (req.fastPath) return { kind: 'settled', result: { output: record.segmentInput, nextStepIndex: record.currentStepIndex } };
    return { kind: 'settled', result: { output: record.currentStepIndex === req.stepIndex + 1 ? record.segmentInput : null } };
  }
  return alreadyTerminal(req, record) ?? { kind: 'run', attempt: record.attempt };
}

/** A commit matched no row: whether this step's outcome is already settled, or the record is no longer this run's, from the record read after it. */
export function decideLostCommit(req: StepRequest, record: ExecutionRecord | null, runId: string): RecordDecision {
  if (!record) return { kind: 'missing', details: recordMissing(req) };
  // The commit was fenced out: the operator may have run (a later step's first try reads no record before it), its outcome was not kept.
  if (!ownsRecord(req, record, runId)) return { kind: 'not_owner', record };
  if (req.fastPath && record.currentStepIndex > req.stepIndex) {
    return { kind: 'settled', result: { output: record.segmentInput, nextStepIndex: record.currentStepIndex } };
  }
  if (record.currentStepIndex === req.stepIndex + 1) return { kind: 'settled', result: { output: record.segmentInput } };
  return (
    alreadyTerminal(req, record) ?? {
      kind: 'moved',
      message: `execution ${req.executionId} moved to ${record.status} step ${record.currentStepIndex} attempt ${record.attempt}`,
    }
  );
}

// ---------------------------------------------------------------------------------------
// A run that does not own the record

/** Whether a refused run's delivery looks for commits from before run ids were kept (they were logged with none). */
export function looksForLegacyRun(req: Pick<StepRequest, 'firstOfRun' | 'notFirstRun'>): boolean {
  return !req.firstOfRun && !req.notFirstRun;
}

/**
 * How a run that does not own the record ends. A run that committed an outcome once owned it:
 * it was superseded by a re-drive, and ends as it committed (the same failure, the same
 * transition), so the re-drive's run can start. Any other run was never the orchestrator's
 * (a Reset, a second start of a dispatch), or is one from before run ids (`legacy`).
 */
export type Refusal = { kind: 'superseded'; details: TerminalDetails; committed: RunOutcome } | { kind: 'foreign'; legacy: boolean };

export function decideRefusal(req: { executionId: string }, committed: RunOutcome | null, legacyCommitted: boolean): Refusal {
  if (committed) return { kind: 'superseded', details: supersededDetails(req, committed), committed };
  return { kind: 'foreign', legacy: legacyCommitted };
}

/** How a superseded run ends: with the outcome it committed last. */
export function supersededDetails(req: { executionId: string }, committed: RunOutcome): TerminalDetails {
  const terminal = committed.outcome === 'FAILED' || committed.outcome === 'REMOTE_OUTCOME_UNKNOWN';
  return {
    status: committed.outcome === 'REMOTE_OUTCOME_UNKNOWN' ? 'REMOTE_OUTCOME_UNKNOWN' : 'FAILED',
    terminalReason: terminal ? committed.terminalReason : null,
    errorCode: (terminal ? committed.errorCode : null) ?? 'EXECUTION_REDRIVEN',
    stepIndex: committed.stepIndex,
    transitionKey: makeTransitionKey(req.executionId, committed.stepIndex, committed.attempt),
  };
}

/** What an operator who reset a run should know: the execution's real state, and the command that runs it again when one would. */
export function foreignRunAdvice(req: { tenantId: string; executionId: string }, record: ExecutionRecord, failedCommand = false): string {
  // The command as it works for this execution: a FAILED one needs --allow-failed, a retained Command effect the intent, every re-drive a reason.
  const redrive = `npx pipeline-admin redrive ${req.executionId} --tenant ${req.tenantId} --reason "…" --allow-failed`;
  switch (record.status) {
    case 'FAILED':
      return `Execution ${req.executionId} is FAILED in its record; to run it again, re-drive it: ${redrive}${failedCommand ? ' --intent RETRY_FAILED_COMMAND' : ''}`;
    case 'REMOTE_OUTCOME_UNKNOWN':
      return `Execution ${req.executionId} is REMOTE_OUTCOME_UNKNOWN in its record; check whether its remote call took effect (docs/runbook.md), and if it did not, re-drive it: ${redrive} --confirmed-disposition NOT_APPLIED`;
    case 'SUCCEEDED':
      return `Execution ${req.executionId} is SUCCEEDED in its record; nothing to run again.`;
    default:
      return `Execution ${req.executionId} is ${record.status} in its record; its own run ${record.runId ?? '(not started yet)'} carries it on (if that run was terminated, by this Reset say, the record ends FAILED shortly and can then be re-driven).`;
  }
}

/** The message a superseded run's workflow fails with. */
export function supersededMessage(
  req: { tenantId: string; executionId: string },
  record: ExecutionRecord,
  committed: RunOutcome,
  details: TerminalDetails,
  afterOperator: boolean,
): string {
  const delivery = afterOperator ? 'its outcome was not committed' : 'this delivery ran no step and committed nothing';
  return `execution ${req.executionId}: this run's step ${committed.stepIndex} ended ${committed.outcome} (transition ${details.transitionKey}, ${details.errorCode}) before Temporal heard of it, and the execution has been re-driven since: ${delivery}. ${foreignRunAdvice(req, record)}`;
}

/** The reason a foreign run is refused with (noted in the execution's history, and the workflow's failure message). */
export function foreignRunReason(
  req: Pick<StepRequest, 'tenantId' | 'executionId' | 'notFirstRun'>,
  record: ExecutionRecord,
  refusal: { afterOperator: boolean; legacy: boolean; failedCommandRetained: boolean },
): string {
  const how = req.notFirstRun
    ? 'a Reset in the Temporal UI or CLI'
    : refusal.legacy
      ? 'a run from before run ids were kept, superseded since, or a Reset of one'
      : 'a second start of a dispatch another run owns, or a Reset';
  const ran = refusal.afterOperator ? "this run's step outcome was not committed" : 'this run ran no step';
  // A run from before run ids was the orchestrator's, once: it no longer owns the execution.
  const what = refusal.legacy ? 'a run that no longer owns this execution' : 'not started by the orchestrator';
  return `${what} (${how}): ${ran}. ${foreignRunAdvice(req, record, refusal.failedCommandRetained)}`;
}

// ---------------------------------------------------------------------------------------
// Before the operator: the step's definition, the re-drive intent, the Command claim

/** A worker behind a rollout (the pinned version is newer than any it has) leaves the step to one that has it, committing nothing: why, else undefined. */
export function behindRollout(resolved: StepResolution): string | undefined {
  return !resolved.found && !resolved.gone ? resolved.reason : undefined;
}

/** What the attempt does before the operator is invoked. */
export type BeforeInvoke =
  /** the attempt fails before the target is invoked */
  | { kind: 'fail'; failure: StepFailure }
  /** a Command step claims its effect first (`onlyNew`: an ordinary replay claims only an effect that does not exist yet) */
  | { kind: 'claim'; onlyNew: boolean }
  | { kind: 'invoke' };

export function decideBeforeInvoke(
  req: Pick<StepRequest, 'stepIndex' | 'redriveIntent'>,
  step: { name: string; command: boolean } | { name: string; goneReason: string },
): BeforeInvoke {
  if ('goneReason' in step) {
    // The pinned definition was dropped from this deploy: end the execution clearly rather than run another step.
    return {
      kind: 'fail',
      failure: {
        retryable: false,
        errorCode: 'PIPELINE_STEP_GONE',
        errorMessage: `step ${req.stepIndex} (${step.name}) cannot run: ${step.goneReason}`,
        terminalEffectStatus: 'FAILED_TERMINAL',
      },
    };
  }
  if (req.redriveIntent === 'RETRY_FAILED_COMMAND' && !step.command) {
    return {
      kind: 'fail',
      failure: {
        retryable: false,
        errorCode: 'RETRY_INTENT_NOT_A_COMMAND',
        errorMessage: `step ${req.stepIndex} (${step.name}) is not a Command step; RETRY_FAILED_COMMAND cannot retry it`,
        terminalEffectStatus: 'FAILED_TERMINAL',
      },
    };
  }
  if (step.command) return { kind: 'claim', onlyNew: req.redriveIntent === 'ORDINARY' };
  return { kind: 'invoke' };
}

/** What a Command step does with its claim. */
export type ClaimDecision =
  /** claimed: invoke the operator; the commit writes the effect */
  | { kind: 'invoke'; effect: EffectChange }
  /** the effect SUCCEEDED already: commit its stored result, never invoke again */
  | { kind: 'reuse'; output: unknown }
  /** any other status: the step ends, the effect is never redispatched */
  | { kind: 'fail'; failure: StepFailure };

export function decideClaim(claim: ClaimOutcome, stepIndex: number, transitionKey: string): ClaimDecision {
  if (claim.claimed) return { kind: 'invoke', effect: { status: 'SUCCEEDED', transitionKey } };
  if (claim.effect.status === 'SUCCEEDED') return { kind: 'reuse', output: claim.effect.result };
  return {
    kind: 'fail',
    failure: {
      retryable: false,
      errorCode: 'COMMAND_EFFECT_NOT_REDISPATCHABLE',
      errorMessage: `Command effect of step ${stepIndex} is ${claim.effect.status}; it is never redispatched`,
      terminalEffectStatus: claim.effect.status,
    },
  };
}

/**
 * A worker that died is not a worker that failed. Once a delivery of the identity may have
 * reached the worker (`sent`: noted in the store before anything is sent), a delivery that
 * cannot reach it is an unanswered delivery of the same identity, asked again on the
 * in-progress budget's clock (a new attempt would be a new key, and the restarted worker
 * would run the effect again). Only a refusal on the identity's very first send fails the attempt.
 */
export function afterDeliveryError(sent: boolean, unreachable: boolean): { sent: boolean; unconfirmed: boolean } {
  if (!unreachable) return { sent: true, unconfirmed: false };
  return { sent, unconfirmed: sent };
}

// ---------------------------------------------------------------------------------------
// After the operator

/** What happened to the attempt once the operator was invoked. */
export type AttemptEvent =
  /** it returned a JSON output */
  | { kind: 'returned'; output: unknown }
  /** Temporal gave the attempt up (timed out, its run closed or is being cancelled) while it ran */
  | { kind: 'superseded' }
  /** the remote caller deadline passed, or the in-progress budget ran out (`now`: when the adapter heard) */
  | { kind: 'outcome_unknown'; outcome: UnknownOutcome; message: string; invokedAt: Date; now: number }
  /** it failed, classified */
  | { kind: 'failed'; failure: StepFailure };

export interface AttemptState {
  stepIndex: number;
  /** the committed attempt this delivery runs, and its transition identity */
  attempt: number;
  transitionKey: string;
  /** the attempt the run started the step with: this run's retry budget counts from it */
  startAttempt: number;
  retry: RetryPolicy;
  /** the step's call deadline */
  callDeadlineMs: number;
  /** the claimed Command effect, for a Command step */
  effect?: EffectChange;
}

export type AttemptDecision =
  /** commit the outcome (and the effect's result, and the rejects) in one statement */
  | { kind: 'commit_succeeded'; output: unknown; effect?: EffectChange }
  /**
   * Commit nothing: a redelivery runs the same committed attempt under the same identity, so
   * the worker answers "in progress" or replays. Settling here would commit a retry (a new
   * identity: the worker's handler would run again) while the old call may still be running.
   */
  | { kind: 'superseded' }
  /** park the execution REMOTE_OUTCOME_UNKNOWN (effect AMBIGUOUS, the call's evidence kept): no retry, no DLQ entry; the run ends */
  | { kind: 'park'; errorMessage: string; remoteCall: RemoteCall; effect?: EffectChange; details: TerminalDetails }
  /** the worker is still on this identity: deliver the same attempt again after `delayMs`; commit nothing */
  | { kind: 'redeliver'; delayMs: number; failure: StepFailure }
  /** commit the retry intent (the next attempt, its due time) before Temporal retries after `delayMs` */
  | { kind: 'commit_retry'; delayMs: number; nextAttempt: number; failure: StepFailure; effect?: EffectChange }
  /** commit FAILED and the DLQ envelope; the run ends */
  | { kind: 'commit_failed'; terminalReason: TerminalReason; retriesObserved: number; failure: StepFailure; effect?: EffectChange; details: TerminalDetails };

export function decideAttemptEnd(event: AttemptEvent, state: AttemptState, random?: () => number): AttemptDecision {
  const { effect } = state;
  switch (event.kind) {
    case 'returned':
      return { kind: 'commit_succeeded', output: event.output, effect: effect && { ...effect, result: event.output } };
    case 'superseded':
      return { kind: 'superseded' };
    case 'outcome_unknown':
      return {
        kind: 'park',
        errorMessage: event.message,
        remoteCall: parkedRemoteCall(event.outcome, {
          transitionKey: state.transitionKey,
          invokedAt: event.invokedAt,
          deadlineMs: state.callDeadlineMs,
          now: event.now,
        }),
        effect: effect && { ...effect, status: 'AMBIGUOUS' },
        details: {
          status: 'REMOTE_OUTCOME_UNKNOWN',
          terminalReason: null,
          errorCode: 'REMOTE_OUTCOME_UNKNOWN',
          stepIndex: state.stepIndex,
          transitionKey: state.transitionKey,
        },
      };
    case 'failed':
      return decideFailedAttempt(event.failure, state, random);
  }
}

/** A failed attempt (or a failure before the operator): redeliver, commit the retry intent, or commit FAILED. */
export function decideFailedAttempt(failure: StepFailure, state: AttemptState, random?: () => number): AttemptDecision {
  const observed = state.attempt - state.startAttempt;
  const decision = decideFailure(failure, observed, state.retry, random);
  const { effect } = state;
  switch (decision.kind) {
    case 'in_progress':
      return { kind: 'redeliver', delayMs: decision.delayMs, failure };
    case 'retry':
      return {
        kind: 'commit_retry',
        delayMs: decision.delayMs,
        nextAttempt: state.attempt + 1,
        failure,
        effect: effect && { ...effect, status: 'FAILED_RETRYABLE', errorCode: failure.errorCode },
      };
    case 'terminal':
      return {
        kind: 'commit_failed',
        terminalReason: decision.terminalReason,
        retriesObserved: observed,
        failure,
        effect: effect && { ...effect, status: failure.retryable ? 'FAILED_RETRYABLE' : failure.terminalEffectStatus, errorCode: failure.errorCode },
        details: {
          status: 'FAILED',
          terminalReason: decision.terminalReason,
          errorCode: failure.errorCode,
          stepIndex: state.stepIndex,
          transitionKey: state.transitionKey,
        },
      };
  }
}

/** The DLQ envelope of a terminal failure (the store adds the record's execution and correlation fields). */
export function failureEnvelope(f: {
  tenantId: string;
  executionId: string;
  transitionKey: string;
  transport: Transport;
  platform: string;
  terminalReason: TerminalReason;
  errorCode: string;
  errorMessage: string;
  retryable: boolean;
  retriesObserved: number;
  now: number;
}): TerminalFailure['envelope'] {
  return {
    tenantId: f.tenantId,
    executionId: f.executionId,
    transitionKey: f.transitionKey,
    transport: f.transport,
    platform: f.platform,
    terminalStatus: 'FAILED',
    createdAtEpochMs: f.now,
    terminalReason: f.terminalReason,
    errorCode: f.errorCode,
    errorMessage: f.errorMessage,
    retryable: f.retryable,
    retriesObserved: f.retriesObserved,
  };
}

/** Why a remote outcome is unknown, as the transport or the in-progress budget said. */
export type UnknownOutcome =
  | { kind: 'deadline'; protocol: Protocol; target: string; startedAt: Date; deadlineMs: number; elapsedMs: number }
  | { kind: 'in_progress_budget'; protocol: Protocol; target: string; evidence: InProgressEvidence };

/** The evidence a parked execution keeps of its remote call. */
export function parkedRemoteCall(outcome: UnknownOutcome, call: { transitionKey: string; invokedAt: Date; deadlineMs: number; now: number }): RemoteCall {
  if (outcome.kind === 'deadline') {
    return {
      transitionKey: call.transitionKey,
      protocol: outcome.protocol,
      target: outcome.target,
      startedAt: outcome.startedAt.toISOString(),
      deadlineMs: outcome.deadlineMs,
      elapsedMs: outcome.elapsedMs,
    };
  }
  // The worker took the call and kept answering "in progress" (or no delivery got an answer): that is the evidence an operator needs.
  const startedAt = new Date(Math.min(call.invokedAt.getTime(), Date.parse(outcome.evidence.firstAt)));
  return {
    transitionKey: call.transitionKey,
    protocol: outcome.protocol,
    target: outcome.target,
    startedAt: startedAt.toISOString(),
    deadlineMs: call.deadlineMs,
    elapsedMs: call.now - startedAt.getTime(),
    inProgress: outcome.evidence,
  };
}

/** The `decision` field of the `remote_transition_outcome_unknown` event. */
export function parkDecision(remoteCall: RemoteCall): string {
  if (!remoteCall.inProgress) return 'PARKED_REMOTE_OUTCOME_UNKNOWN_NO_RETRY';
  return remoteCall.inProgress.state === 'IN_PROGRESS' ? 'PARKED_IN_PROGRESS_BUDGET_EXHAUSTED' : 'PARKED_DELIVERY_UNCONFIRMED';
}

// ---------------------------------------------------------------------------------------
// Ending a step from outside its attempt: a step Temporal gave up on, a run it closed

/** A first step given up before any delivery took the record: the run takes it now, as that step would have (only a run of the dispatch it is queued for does). */
export function takesNeverTaken(read: ExecutionRecord, req: Pick<AbandonRequest, 'dispatchId'>): boolean {
  return read.status === 'QUEUED' && req.dispatchId !== undefined;
}

export type EndDecision =
  | { kind: 'missing'; details: TerminalDetails }
  /** the run does not own the record: it ends as it committed (see `notOwnerEnd`) */
  | { kind: 'not_owner'; record: ExecutionRecord }
  /** the step ended already: report that */
  | { kind: 'already'; details: TerminalDetails }
  /** commit FAILED and the DLQ envelope for the step the record is at */
  | { kind: 'commit'; record: ExecutionRecord; attempt: number; transitionKey: string; retriesObserved: number };

export function decideEnd(req: AbandonRequest, record: ExecutionRecord | null, runId: string, neverTaken: boolean): EndDecision {
  if (!record) return { kind: 'missing', details: recordMissing(req) };
  // A run that does not own the record commits nothing on it.
  if (!ownsRecord({}, record, runId)) return { kind: 'not_owner', record };
  const already = committedTerminal(record, req.stepIndex);
  if (already) return { kind: 'already', details: already };
  return {
    kind: 'commit',
    record,
    attempt: record.attempt,
    transitionKey: makeTransitionKey(req.executionId, req.stepIndex, record.attempt),
    // A step no delivery ever reached was not retried by this run.
    retriesObserved: neverTaken ? 0 : record.attempt - 1,
  };
}

/** How a run that does not own the record ends: as it committed last, or as a run without the record. */
export function notOwnerEnd(req: AbandonRequest, record: ExecutionRecord, committed: RunOutcome | null): TerminalDetails {
  if (committed) return supersededDetails(req, committed);
  return {
    status: 'FAILED',
    terminalReason: null,
    errorCode: 'RUN_DOES_NOT_OWN_RECORD',
    stepIndex: req.stepIndex,
    transitionKey: makeTransitionKey(req.executionId, req.stepIndex, record.attempt),
  };
}

/** The ending's commit matched no row: report what is committed, or read again on Temporal's retry. */
export function decideEndLost(
  req: AbandonRequest,
  now: ExecutionRecord | null,
): { kind: 'settled'; details: TerminalDetails } | { kind: 'moved'; message: string } {
  const settled = now ? committedTerminal(now, req.stepIndex) : recordMissing(req);
  if (settled) return { kind: 'settled', details: settled };
  return { kind: 'moved', message: `execution ${req.executionId} moved while step ${req.stepIndex} was abandoned` };
}
