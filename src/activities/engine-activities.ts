/**
 * The engine's activities, built by a factory so tests can hand in other parts.
 *
 * `runStep` is the whole life of one step attempt: learn the committed attempt
 * (`resolveAttempt`, only when it may differ from what the workflow knows), claim the
 * Command effect (`claimEffect`), invoke the operator, and commit the outcome in one
 * statement. On a retryable failure it commits
 * the retry intent first and then asks Temporal to retry after the computed delay.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { idempotencyKey, transitionKey as makeTransitionKey } from '../ids';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import type { PipelineRegistry, StepResolution } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';
import type { EffectStore } from '../store/effect-store';
import type { EffectChange, ExecutionRecord, ExecutionStore, RemoteCall, RunOutcome, StepKey, TerminalFailure } from '../store/execution-store';
import type { StepDefinition } from '../pipeline/define';
import type { TerminalReason, Transport } from '../spec-words';
import { FailureTypes, stepActivityType, type StepRequest, type StepResult, type TerminalDetails } from '../workflows/types';
import { invokeStep } from './invoke-step';
import { RejectBuffer } from './rejects';
import { classifyFailure, decideFailure, nonRetryableErrorTypesOf, toJsonOutput, type StepFailure } from './step-failure';
import { DeliveryUnconfirmedError, RemoteOutcomeUnknownError, WorkerUnreachableError } from '../transports/remote';
import { deliverWhileInProgress, InProgressBudgetExhaustedError, type InProgressProgress } from './in-progress';
import type { StepErrorCode } from '../errors';
import type { EndedRun, EndRun, RunEnding } from '../service/run-end-watch';

export interface EngineDeps {
  store: ExecutionStore;
  effects: EffectStore;
  registry: PipelineRegistry;
  log: Log;
  /** reported in DLQ envelopes for LOCAL and FUNCTION steps; default `node-<version>` */
  platform?: string;
  metrics?: Metrics;
  /** pipeline.orchestrator.worker.in-progress-budget, for runs planned before steps carried it; default 5 min */
  inProgressBudgetMs?: number;
  /**
   * The stored shapes of the definitions executions were admitted under: names the step of a
   * record whose pinned version this worker does not have, when a run-end watch or a given-up
   * step ends it (else the step is `#k`).
   */
  definitions?: DefinitionStore;
}

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

export type EngineActivities = ReturnType<typeof createActivities>;

const DEFAULT_IN_PROGRESS_BUDGET_MS = 300_000;

/** What the record says of a run Temporal closed without the engine ending it. */
const RUN_ENDINGS: Record<RunEnding, { errorCode: StepErrorCode; what: string; how: string }> = {
  TERMINATED: {
    errorCode: 'RUN_TERMINATED',
    what: 'was terminated',
    how: '(Terminate in the Temporal UI or CLI, a Reset of the running run, or Temporal itself)',
  },
  CANCELLED: { errorCode: 'RUN_CANCELLED', what: 'was cancelled', how: '(Request Cancellation in the Temporal UI or CLI)' },
  TIMED_OUT: { errorCode: 'RUN_TIMED_OUT', what: 'timed out', how: '(its Temporal run timeout)' },
};

/**
 * The one way an activity ends a run: a non-retryable failure of the type the workflow's
 * retry policy lists as non-retryable, always carrying the TerminalDetails the workflow
 * reads. Without the details the workflow would take the step for abandoned; with another
 * type Temporal would retry it.
 */
export function terminalFailure(details: TerminalDetails, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureTypes.terminal, nonRetryable: true, message, details: [details] });
}

/** The Temporal run this delivery belongs to: what `begin` writes on the record and every commit is fenced by. */
function runOf(activity: Context): string {
  return activity.info.workflowExecution?.runId ?? 'unknown';
}

/**
 * Whether Temporal cancelled this activity because it timed the attempt out, its run closed, or
 * its run is being cancelled (the workflow never cancels a step itself: a cancel request means
 * Request Cancellation of the run, whose record the run-end watch ends). Not a worker shutdown.
 */
function supersededByTemporal(activity: Context): boolean {
  if (!activity.cancellationSignal.aborted) return false;
  const details = activity.cancellationDetails;
  const reason = (activity.cancellationSignal.reason as { message?: unknown } | undefined)?.message;
  return (
    details?.timedOut === true ||
    details?.notFound === true ||
    details?.cancelRequested === true ||
    reason === 'TIMED_OUT' ||
    reason === 'NOT_FOUND' ||
    reason === 'CANCELLED'
  );
}

/** The execution's record is gone (deleted under a running workflow): nothing to commit, the run ends. */
function recordMissing(req: { executionId: string; stepIndex: number; attempt?: number }): TerminalDetails {
  return {
    status: 'FAILED',
    terminalReason: 'non_retryable',
    errorCode: 'EXECUTION_RECORD_MISSING',
    stepIndex: req.stepIndex,
    transitionKey: makeTransitionKey(req.executionId, req.stepIndex, req.attempt ?? 1),
  };
}
const recordMissingFailure = (req: StepRequest) => terminalFailure(recordMissing(req), `execution ${req.executionId} has no record`);

/** The terminal outcome already committed for this step, if any. */
function committedTerminal(record: ExecutionRecord, stepIndex: number): TerminalDetails | undefined {
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

function createEngine(deps: EngineDeps) {
  const { store, effects, registry, log, metrics } = deps;
  const platform = deps.platform ?? `node-${process.versions.node}`;

  /**
   * The operator of (pipeline, pinned version, step name). A request from before versions
   * names no step: it ran the only definition there was, version 1, by position.
   */
  function resolveStep(req: StepRequest): StepResolution {
    const version = req.pipelineVersion ?? 1;
    const stepName = req.stepName ?? registry.find(req.pipeline, version)?.steps[req.stepIndex]?.name;
    if (stepName === undefined) return registry.resolve(req.pipeline, version, `#${req.stepIndex}`);
    return registry.resolve(req.pipeline, version, stepName);
  }

  /** A commit matched no row: find out whether this step's outcome is already settled, or the record is no longer this run's. */
  async function settle(req: StepRequest): Promise<StepResult> {
    const record = await store.get(req.tenantId, req.executionId);
    if (!record) throw recordMissingFailure(req);
    const runId = runOf(Context.current());
    // The commit was fenced out: the operator may have run (a later step's first try reads no record before it), its outcome was not kept.
    if (!ownsRecord(req, record, runId)) throw await refuseRun(req, record, runId, true);
    if (req.fastPath && record.currentStepIndex > req.stepIndex) return { output: record.segmentInput, nextStepIndex: record.currentStepIndex };
    if (record.currentStepIndex === req.stepIndex + 1) return { output: record.segmentInput };
    const terminal = committedTerminal(record, req.stepIndex);
    if (terminal) throw terminalFailure(terminal, `execution ${req.executionId} already ${record.status} at step ${req.stepIndex}`);
    // The state moved under us (another delivery committed a retry): let Temporal try again from the stored state.
    throw ApplicationFailure.create({
      type: FailureTypes.retryable,
      message: `execution ${req.executionId} moved to ${record.status} step ${record.currentStepIndex} attempt ${record.attempt}`,
    });
  }

  /**
   * The attempt this delivery runs as. Only a run's first step or a Temporal retry can see
   * a committed attempt the workflow does not know, so only those read (and begin) the
   * record; they may also find the step already settled (a redelivery after its commit),
   * or the run a duplicate of another start of the same dispatch.
   */
  async function resolveAttempt(req: StepRequest, activity: Context): Promise<{ attempt: number } | { settled: StepResult }> {
    // A fast-path step that may have run on a worker that died reads too: a local activity re-run is at attempt 1 again.
    if (!req.firstOfRun && !req.notFirstRun && !req.mayHaveRun && activity.info.attempt === 1) return { attempt: req.attempt };
    const runId = runOf(activity);
    const record = await store.begin({ tenantId: req.tenantId, executionId: req.executionId, runId, dispatchId: req.dispatchId ?? null });
    if (!record) throw recordMissingFailure(req);
    // Before anything else: a record another run (or a re-drive) has taken tells this run nothing about its own step.
    if (!ownsRecord(req, record, runId)) throw await refuseRun(req, record, runId);
    if (record.currentStepIndex > req.stepIndex) {
      // A fast-path workflow task whose worker died may have committed several steps: the run carries on from the record's.
      if (req.fastPath) return { settled: { output: record.segmentInput, nextStepIndex: record.currentStepIndex } };
      return { settled: { output: record.currentStepIndex === req.stepIndex + 1 ? record.segmentInput : null } };
    }
    const terminal = committedTerminal(record, req.stepIndex);
    if (terminal) throw terminalFailure(terminal, `execution ${req.executionId} already ${record.status} at step ${req.stepIndex}`);
    return { attempt: record.attempt };
  }

  /**
   * Whether the record is this run's. A run's first step took it (`begin` wrote the run id),
   * so that step and every Temporal retry after it must find the run's own id. Only a record
   * from before run ids were kept has none while RUNNING. A run that finds another id, or a
   * QUEUED record, has been superseded or never owned it.
   */
  function ownsRecord(req: Pick<StepRequest, 'firstOfRun' | 'notFirstRun'>, record: ExecutionRecord, runId: string): boolean {
    if (record.runId === runId) return true;
    if (req.firstOfRun || req.notFirstRun) return false;
    return record.runId === null && record.status !== 'QUEUED';
  }

  /**
   * The answer to a delivery of a run that does not own the record. A run that committed an
   * outcome once owned it: it was superseded (see `supersededRun`). Any other run was never
   * the orchestrator's (see `refuseForeignRun`). Neither commits. Refused before the operator, the
   * delivery ran no step; refused at the commit (`afterOperator`), its outcome was not kept.
   */
  /** Whether a FAILED record's failed step is a Command whose effect is retained (its re-drive then needs the intent). */
  async function failedCommandRetained(record: ExecutionRecord): Promise<boolean> {
    if (record.status !== 'FAILED') return false;
    return (await effects.get(record.tenantId, record.executionId, record.currentStepIndex)) !== null;
  }

  async function refuseRun(req: StepRequest, record: ExecutionRecord, runId: string, afterOperator = false): Promise<ApplicationFailure> {
    const committed = await store.lastOutcomeOfRun({ tenantId: req.tenantId, executionId: req.executionId, runId });
    if (committed) return supersededRun(req, record, runId, committed, afterOperator);
    // Commits from before run ids were logged with none: a later step's delivery then most likely comes from such a run.
    const legacy =
      !req.firstOfRun && !req.notFirstRun && (await store.lastOutcomeOfRun({ tenantId: req.tenantId, executionId: req.executionId, runId: null })) !== null;
    return refuseForeignRun(req, record, runId, afterOperator, legacy);
  }

  /**
   * A run whose step committed its terminal outcome, but whose worker died before Temporal
   * heard of it: Temporal delivers the step again. Meanwhile a re-drive has queued the
   * execution for a new run, which cannot start while this one is open. The delivery ends
   * this run as it committed (the same failure, the same transition), so the re-drive's run
   * can start; it runs no operator and commits nothing. Without this the delivery would run
   * the operator under the re-drive's attempt, fail to commit it (the record is QUEUED) and be
   * retried until Temporal's attempts ran out.
   */
  function supersededRun(req: StepRequest, record: ExecutionRecord, runId: string, committed: RunOutcome, afterOperator: boolean): ApplicationFailure {
    const details = supersededDetails(req, record, runId, committed);
    const delivery = afterOperator ? 'its outcome was not committed' : 'this delivery ran no step and committed nothing';
    return terminalFailure(
      details,
      `execution ${req.executionId}: this run's step ${committed.stepIndex} ended ${committed.outcome} (transition ${details.transitionKey}, ${details.errorCode}) before Temporal heard of it, and the execution has been re-driven since: ${delivery}. ${foreignRunAdvice(req, record)}`,
    );
  }

  /** How a superseded run ends: with the outcome it committed last (logged, for the operator who wonders why the run failed again). */
  function supersededDetails(req: { tenantId: string; executionId: string }, record: ExecutionRecord, runId: string, committed: RunOutcome): TerminalDetails {
    const terminal = committed.outcome === 'FAILED' || committed.outcome === 'REMOTE_OUTCOME_UNKNOWN';
    const details: TerminalDetails = {
      status: committed.outcome === 'REMOTE_OUTCOME_UNKNOWN' ? 'REMOTE_OUTCOME_UNKNOWN' : 'FAILED',
      terminalReason: terminal ? committed.terminalReason : null,
      errorCode: (terminal ? committed.errorCode : null) ?? 'EXECUTION_REDRIVEN',
      stepIndex: committed.stepIndex,
      transitionKey: makeTransitionKey(req.executionId, committed.stepIndex, committed.attempt),
    };
    log.warn({
      event: 'execution_superseded_run_refused',
      tenantId: req.tenantId,
      executionId: req.executionId,
      runId,
      ownerRunId: record.runId,
      status: record.status,
      transitionKey: details.transitionKey,
    });
    return details;
  }

  /**
   * A run the orchestrator did not start (a Reset in the Temporal UI or CLI, or a second
   * start of a dispatch another run owns) runs no step: the record's own run owns it. The
   * refusal is noted in the execution's history and its message, which the workflow fails
   * with, says what the execution really is and what to do instead.
   */
  async function refuseForeignRun(
    req: StepRequest,
    record: ExecutionRecord,
    runId: string,
    afterOperator: boolean,
    legacy = false,
  ): Promise<ApplicationFailure> {
    const how = req.notFirstRun
      ? 'a Reset in the Temporal UI or CLI'
      : legacy
        ? 'a run from before run ids were kept, superseded since, or a Reset of one'
        : 'a second start of a dispatch another run owns, or a Reset';
    const ran = afterOperator ? "this run's step outcome was not committed" : 'this run ran no step';
    // A run from before run ids was the orchestrator's, once: it no longer owns the execution.
    const what = legacy ? 'a run that no longer owns this execution' : 'not started by the orchestrator';
    const reason = `${what} (${how}): ${ran}. ${foreignRunAdvice(req, record, await failedCommandRetained(record))}`;
    await store.noteForeignRun({ tenantId: req.tenantId, executionId: req.executionId, runId, ownerRunId: record.runId, recordStatus: record.status, reason });
    log.warn({
      event: 'execution_foreign_run_refused',
      tenantId: req.tenantId,
      executionId: req.executionId,
      runId,
      ownerRunId: record.runId,
      status: record.status,
    });
    return ApplicationFailure.create({ type: FailureTypes.duplicateRun, nonRetryable: true, message: reason });
  }

  /**
   * A Command step claims its effect before the operator runs. A claim that fails finds the
   * effect already there: SUCCEEDED → its stored result is committed and reused (never
   * invoked again); any other status → the step ends, the effect is never redispatched.
   */
  async function claimEffect(
    req: StepRequest,
    step: StepDefinition,
    stepKey: StepKey,
    transitionKey: string,
    fail: (failure: StepFailure, effect?: EffectChange) => Promise<StepResult>,
  ): Promise<{ effect: EffectChange } | { settled: StepResult }> {
    const claim = await effects.claim({ ...stepKey, stepName: step.name, transitionKey, onlyNew: req.redriveIntent === 'ORDINARY' });
    if (claim.claimed) return { effect: { status: 'SUCCEEDED', transitionKey } };
    if (claim.effect.status !== 'SUCCEEDED') {
      return {
        settled: await fail({
          retryable: false,
          errorCode: 'COMMAND_EFFECT_NOT_REDISPATCHABLE',
          errorMessage: `Command effect of step ${req.stepIndex} is ${claim.effect.status}; it is never redispatched`,
          terminalEffectStatus: claim.effect.status,
        }),
      };
    }
    const committed = await store.commitSucceeded({ ...stepKey, output: claim.effect.result });
    if (!committed.committed) return { settled: await settle(req) };
    if (committed.status === 'SUCCEEDED') metrics?.succeeded.inc();
    return { settled: { output: claim.effect.result } };
  }

  /**
   * A worker that died is not a worker that failed. The identity's delivery is noted in the
   * store before anything is sent, so every later delivery of it (this loop's, another Temporal
   * attempt's, one after an engine worker crash) knows whether the worker may already have it.
   * Once one may have, a delivery that cannot reach the worker is not a failed attempt (a new
   * attempt would be a new key, and the restarted worker would run the effect again): it is an
   * unanswered delivery of the same identity, asked again on the in-progress budget's clock.
   * Only a refusal on the identity's very first send fails the attempt.
   */
  async function sentOnce<T>(key: StepKey, call: () => Promise<T>): Promise<() => Promise<T>> {
    let sent = (await store.noteRemoteDelivery(key)).earlier;
    return async () => {
      try {
        return await call();
      } catch (err) {
        if (!(err instanceof WorkerUnreachableError)) sent = true;
        else if (sent) throw new DeliveryUnconfirmedError(err.protocol, err.target, null, `${err.code} after an earlier delivery of this identity was sent`);
        throw err;
      }
    };
  }

  async function runStep(request: StepRequest): Promise<StepResult> {
    // The workflow leaves out fields at their default (null, false); older runs still send them.
    const req = { ...request, correlationId: request.correlationId ?? null };
    const activity = Context.current();
    const resolved = resolveStep(req);
    // A worker behind a rollout (the pinned version is newer than any it has) leaves the step to one that has it, committing nothing.
    if (!resolved.found && !resolved.gone) throw ApplicationFailure.create({ type: FailureTypes.retryable, message: resolved.reason });
    const resolvedAttempt = await resolveAttempt(req, activity);
    if ('settled' in resolvedAttempt) return resolvedAttempt.settled;
    const { attempt } = resolvedAttempt;
    const transitionKey = makeTransitionKey(req.executionId, req.stepIndex, attempt);
    const stepKey: StepKey = { tenantId: req.tenantId, executionId: req.executionId, stepIndex: req.stepIndex, attempt, runId: runOf(activity) };
    const stepName = resolved.found ? resolved.step.name : (req.stepName ?? `#${req.stepIndex}`);
    const logFields = {
      tenantId: req.tenantId,
      executionId: req.executionId,
      transitionKey,
      correlationId: req.correlationId,
      step: stepName,
      pipelineVersion: req.pipelineVersion ?? 1,
    };
    const fail = (failure: StepFailure, effect?: EffectChange) =>
      failStep(req, attempt, transitionKey, resolved.found ? resolved.step.transport : (req.transport ?? 'LOCAL'), failure, logFields, effect);

    if (!resolved.found) {
      // The pinned definition was dropped from this deploy: end the execution clearly rather than run another step.
      return fail({
        retryable: false,
        errorCode: 'PIPELINE_STEP_GONE',
        errorMessage: `step ${req.stepIndex} (${stepName}) cannot run: ${resolved.reason}`,
        terminalEffectStatus: 'FAILED_TERMINAL',
      });
    }
    const step = resolved.step;

    if (req.redriveIntent === 'RETRY_FAILED_COMMAND' && !step.command) {
      return fail({
        retryable: false,
        errorCode: 'RETRY_INTENT_NOT_A_COMMAND',
        errorMessage: `step ${req.stepIndex} (${step.name}) is not a Command step; RETRY_FAILED_COMMAND cannot retry it`,
        terminalEffectStatus: 'FAILED_TERMINAL',
      });
    }

    let effect: EffectChange | undefined;
    if (step.command) {
      const claimed = await claimEffect(req, step, stepKey, transitionKey, fail);
      if ('settled' in claimed) return claimed.settled;
      effect = claimed.effect;
    }

    const rejects = new RejectBuffer(step.name);
    const heartbeatEveryMs = activity.info.heartbeatTimeoutMs ? Math.max(100, Math.floor(activity.info.heartbeatTimeoutMs / 3)) : undefined;
    // The in-progress budget's progress rides on every heartbeat, so a redelivery of this activity goes on with it.
    let progress: InProgressProgress | undefined;
    const invoke = () =>
      invokeStep({
        step,
        input: req.input,
        timeoutMs: req.timeoutMs,
        cancellation: activity.cancellationSignal,
        heartbeat: () => activity.heartbeat(progress),
        heartbeatEveryMs,
        log,
        onDeadlineWarning: (protocol: string) => metrics?.deadlineWarnings.inc({ protocol }),
        context: {
          tenantId: req.tenantId,
          executionId: req.executionId,
          correlationId: req.correlationId,
          pipeline: req.pipeline,
          stepIndex: req.stepIndex,
          stepName: step.name,
          attempt,
          transitionKey,
          idempotencyKey: idempotencyKey(req.tenantId, transitionKey),
          reject: rejects.reject,
        },
      });
    const startedAt = new Date();
    const remote = step.transport === 'REST' || step.transport === 'GRPC';
    let output: unknown;
    try {
      const raw = remote
        ? await deliverWhileInProgress(await sentOnce(stepKey, invoke), {
            transitionKey,
            budgetMs: req.inProgressBudgetMs ?? deps.inProgressBudgetMs ?? DEFAULT_IN_PROGRESS_BUDGET_MS,
            callDeadlineMs: req.timeoutMs,
            hardStopAt: activity.info.currentAttemptScheduledTimestampMs + activity.info.startToCloseTimeoutMs,
            resumed: activity.info.heartbeatDetails,
            heartbeat: (current) => {
              progress = current;
              activity.heartbeat(current);
            },
            heartbeatEveryMs: heartbeatEveryMs ?? 1000,
            signal: activity.cancellationSignal,
            onAnswer: (current, delayMs) => log.info({ event: 'remote_transition_in_progress', ...logFields, attempt, answers: current.answers, delayMs }),
          })
        : await invoke();
      output = toJsonOutput(raw);
    } catch (err) {
      // Temporal already gave this attempt up (a heartbeat it did not get in time) or its run is
      // gone: a redelivery runs the same committed attempt, under the same identity, so the
      // worker answers "in progress" or replays. Settling it here would commit a retry (a new
      // identity: the worker's handler would run again) while the old call may still be running.
      if (supersededByTemporal(activity)) {
        log.info({
          event: 'step_attempt_superseded',
          ...logFields,
          attempt,
          reason: String((activity.cancellationSignal.reason as { message?: unknown } | undefined)?.message ?? ''),
        });
        throw activity.cancellationSignal.reason;
      }
      if (err instanceof RemoteOutcomeUnknownError || err instanceof InProgressBudgetExhaustedError)
        return parkOutcomeUnknown(req, attempt, transitionKey, err, logFields, effect, startedAt);
      return fail(classifyFailure(err, { nonRetryableErrorTypes: nonRetryableErrorTypesOf(step, resolved.pipeline) }), effect);
    }

    const committed = await store.commitSucceeded({
      ...stepKey,
      output,
      effect: effect && { ...effect, result: output },
      rejects: rejects.pending.length > 0 ? { transitionKey, step: step.name, items: rejects.pending } : undefined,
    });
    if (!committed.committed) return settle(req);
    if (rejects.pending.length > 0) {
      log.info({ event: 'item_rejects_committed', ...logFields, count: rejects.pending.length });
      for (const item of rejects.pending) metrics?.rejects.inc({ error_code: metrics.code(item.errorCode) });
    }
    if (committed.status === 'SUCCEEDED') metrics?.succeeded.inc();
    log.debug({ event: 'execution_step_succeeded', ...logFields, version: committed.version });
    return { output };
  }

  async function failStep(
    req: StepRequest,
    attempt: number,
    transitionKey: string,
    transport: Transport,
    failure: StepFailure,
    logFields: Record<string, unknown>,
    effect: EffectChange | undefined,
  ): Promise<StepResult> {
    // This run's retry budget counts from the attempt the run started the step with.
    const observed = attempt - req.attempt;
    const decision = decideFailure(failure, observed, req.retry);
    if (decision.kind === 'in_progress') {
      // Not a failed attempt: the worker is still on this identity. Deliver the same one again; commit nothing.
      log.info({ event: 'remote_transition_in_progress', ...logFields, attempt });
      throw ApplicationFailure.create({
        type: FailureTypes.retryable,
        message: `${failure.errorCode}: ${failure.errorMessage}`,
        nextRetryDelay: decision.delayMs,
      });
    }
    if (decision.kind === 'retry') {
      const delayMs = decision.delayMs;
      const committed = await store.commitRetry({
        tenantId: req.tenantId,
        executionId: req.executionId,
        stepIndex: req.stepIndex,
        attempt,
        runId: runOf(Context.current()),
        delayMs,
        errorCode: failure.errorCode,
        errorMessage: failure.errorMessage,
        effect: effect && { ...effect, status: 'FAILED_RETRYABLE', errorCode: failure.errorCode },
      });
      if (!committed.committed) return settle(req);
      log.info({ event: 'execution_step_retry_scheduled', ...logFields, errorCode: failure.errorCode, attempt, nextAttempt: attempt + 1, delayMs });
      metrics?.retries.inc({ error_code: metrics.code(failure.errorCode) });
      // Names the committed attempt, which Temporal's attempt counter does not (it starts at 1 in each run and counts redeliveries).
      throw ApplicationFailure.create({
        type: FailureTypes.retryable,
        message: `transition ${transitionKey} failed, retry as attempt ${attempt + 1}: ${failure.errorCode}: ${failure.errorMessage}`,
        nextRetryDelay: delayMs,
      });
    }

    const terminalReason: TerminalReason = decision.terminalReason;
    const envelope = {
      tenantId: req.tenantId,
      executionId: req.executionId,
      transitionKey,
      transport,
      platform: failure.platform ?? platform,
      terminalStatus: 'FAILED',
      createdAtEpochMs: Date.now(),
      terminalReason,
      errorCode: failure.errorCode,
      errorMessage: failure.errorMessage,
      retryable: failure.retryable,
      retriesObserved: observed,
    };
    const committed = await store.commitFailed({
      tenantId: req.tenantId,
      executionId: req.executionId,
      stepIndex: req.stepIndex,
      attempt,
      runId: runOf(Context.current()),
      failure: { terminalReason, errorCode: failure.errorCode, errorMessage: failure.errorMessage, transitionKey, envelope, step: String(logFields.step) },
      effect: effect && { ...effect, status: failure.retryable ? 'FAILED_RETRYABLE' : failure.terminalEffectStatus, errorCode: failure.errorCode },
    });
    if (!committed.committed) return settle(req);
    log.warn({ event: 'execution_failed', ...logFields, terminalReason, errorCode: failure.errorCode, retriesObserved: observed, version: committed.version });
    metrics?.failed.inc({ terminal_reason: terminalReason, error_code: metrics.code(failure.errorCode) });
    throw terminalFailure(
      { status: 'FAILED', terminalReason, errorCode: failure.errorCode, stepIndex: req.stepIndex, transitionKey },
      `transition ${transitionKey} failed, ${terminalReason}: ${failure.errorCode}: ${failure.errorMessage}`,
    );
  }

  /**
   * The remote caller deadline passed: the worker may or may not have applied the effect.
   * Park the execution as REMOTE_OUTCOME_UNKNOWN (effect AMBIGUOUS, the call's evidence
   * kept on the record), schedule no retry, write no DLQ entry, and end the run.
   */
  async function parkOutcomeUnknown(
    req: StepRequest,
    attempt: number,
    transitionKey: string,
    err: RemoteOutcomeUnknownError | InProgressBudgetExhaustedError,
    logFields: Record<string, unknown>,
    effect: EffectChange | undefined,
    invokedAt: Date,
  ): Promise<StepResult> {
    let remoteCall: RemoteCall;
    if (err instanceof RemoteOutcomeUnknownError) {
      remoteCall = {
        transitionKey,
        protocol: err.protocol,
        target: err.target,
        startedAt: err.startedAt.toISOString(),
        deadlineMs: err.deadlineMs,
        elapsedMs: err.elapsedMs,
      };
    } else {
      // The worker took the call and kept answering "in progress" (or no delivery got an answer): that is the evidence an operator needs.
      const startedAt = new Date(Math.min(invokedAt.getTime(), Date.parse(err.evidence.firstAt)));
      remoteCall = {
        transitionKey,
        protocol: err.protocol,
        target: err.target,
        startedAt: startedAt.toISOString(),
        deadlineMs: req.timeoutMs,
        elapsedMs: Date.now() - startedAt.getTime(),
        inProgress: err.evidence,
      };
    }
    const committed = await store.commitOutcomeUnknown({
      tenantId: req.tenantId,
      executionId: req.executionId,
      stepIndex: req.stepIndex,
      attempt,
      runId: runOf(Context.current()),
      errorCode: 'REMOTE_OUTCOME_UNKNOWN',
      errorMessage: err.message,
      remoteCall,
      effect: effect && { ...effect, status: 'AMBIGUOUS' },
    });
    if (!committed.committed) return settle(req);
    const { step: _step, ...ids } = logFields;
    metrics?.outcomeUnknown.inc({ protocol: err.protocol });
    log.error({
      event: 'remote_transition_outcome_unknown',
      ...ids,
      attempt,
      protocol: err.protocol,
      target: err.target,
      elapsedMs: remoteCall.elapsedMs,
      deadlineMs: remoteCall.deadlineMs,
      ...(remoteCall.inProgress
        ? {
            inProgressAnswers: remoteCall.inProgress.answers,
            inProgressBudgetMs: remoteCall.inProgress.budgetMs,
            decision: remoteCall.inProgress.state === 'IN_PROGRESS' ? 'PARKED_IN_PROGRESS_BUDGET_EXHAUSTED' : 'PARKED_DELIVERY_UNCONFIRMED',
          }
        : { decision: 'PARKED_REMOTE_OUTCOME_UNKNOWN_NO_RETRY' }),
    });
    throw terminalFailure(
      { status: 'REMOTE_OUTCOME_UNKNOWN', terminalReason: null, errorCode: 'REMOTE_OUTCOME_UNKNOWN', stepIndex: req.stepIndex, transitionKey },
      err.message,
    );
  }

  /**
   * Temporal gave up on a step without the activity committing an outcome (the worker
   * kept dying past the redelivery allowance). Commit FAILED and a DLQ envelope now.
   */
  async function abandonStep(req: AbandonRequest): Promise<TerminalDetails> {
    // The run is read from the activity's context once the record is known to exist (tests call this outside one).
    const ended = await endStep(req, () => runOf(Context.current()), {
      errorCode: 'STEP_ABANDONED',
      terminalReason: 'retry_exhausted',
      retryable: true,
      message: () => req.reason,
    });
    return ended.details;
  }

  /**
   * A run Temporal closed without the engine ending it (Terminate, cancellation, a run timeout;
   * found by service/run-end-watch.ts): its record ends FAILED at the step it was at, as an
   * abandoned step's does. 'moved' when this call did not commit it: the record moved since the
   * watch looked (a step, another worker's watch or a re-drive committed first).
   */
  async function endRun(run: EndedRun): Promise<'ended' | 'moved'> {
    const ending = RUN_ENDINGS[run.ending];
    // Who and why when Temporal recorded it (Terminate), else how such a run usually ends.
    const by = run.terminatedBy;
    const how = by ? `by ${by.identity || 'an unnamed client'} (reason: "${by.reason}")` : ending.how;
    const ended = await endStep(
      { tenantId: run.tenantId, executionId: run.executionId, stepIndex: run.stepIndex, reason: ending.what, dispatchId: run.dispatchId },
      () => run.runId,
      {
        errorCode: ending.errorCode,
        terminalReason: 'non_retryable',
        retryable: false,
        message: (step) =>
          `its Temporal run ${run.runId} ${ending.what} ${how} at step ${run.stepIndex} (${step}), and no step carries it on; re-drive it (allowFailed=true) to run it again from that step`,
      },
    ).catch((err: unknown) => {
      // Committed by someone else between the read and the commit, at another step: a later pass looks again.
      if (err instanceof ApplicationFailure && err.type === FailureTypes.retryable) return { committed: false };
      throw err;
    });
    return ended.committed ? 'ended' : 'moved';
  }

  /**
   * A step's name from the shape stored at the record's admission, for a worker without the
   * record's pinned version (one rolled forward, or not yet rolled). Never on a step's own path.
   */
  async function storedStepName(record: ExecutionRecord, stepIndex: number): Promise<string | undefined> {
    const shape = await deps.definitions?.find(record.pipeline, record.pipelineVersion, record.definitionFingerprint);
    return shape?.steps[stepIndex];
  }

  /** Commits FAILED and a DLQ envelope for the step the record is at, fenced by the run's ownership of the record. */
  async function endStep(
    req: AbandonRequest,
    runOfDelivery: () => string,
    ending: { errorCode: StepErrorCode; terminalReason: TerminalReason; retryable: boolean; message: (stepName: string) => string },
  ): Promise<{ details: TerminalDetails; committed: boolean }> {
    const read = await store.get(req.tenantId, req.executionId);
    if (!read) return { details: recordMissing(req), committed: false };
    const runId = runOfDelivery();
    // A first step given up before any delivery took the record: take it now, as that step
    // would have (only a run of the dispatch the record is queued for does), and end it below.
    const neverTaken = read.status === 'QUEUED' && req.dispatchId !== undefined;
    const record = neverTaken ? await store.begin({ tenantId: req.tenantId, executionId: req.executionId, runId, dispatchId: req.dispatchId ?? null }) : read;
    if (!record) return { details: recordMissing(req), committed: false };
    // A run that does not own the record commits nothing on it: it ends as it committed, or as a run without the record.
    if (!ownsRecord({}, record, runId)) {
      const committed = await store.lastOutcomeOfRun({ tenantId: req.tenantId, executionId: req.executionId, runId });
      if (committed) return { details: supersededDetails(req, record, runId, committed), committed: false };
      const details: TerminalDetails = {
        status: 'FAILED',
        terminalReason: null,
        errorCode: 'RUN_DOES_NOT_OWN_RECORD',
        stepIndex: req.stepIndex,
        transitionKey: makeTransitionKey(req.executionId, req.stepIndex, record.attempt),
      };
      return { details, committed: false };
    }
    const already = committedTerminal(record, req.stepIndex);
    if (already) return { details: already, committed: false };
    const pinnedStep = registry.find(record.pipeline, record.pipelineVersion)?.steps[req.stepIndex];
    const transport = req.transport ?? pinnedStep?.transport ?? 'LOCAL';
    const stepName = req.stepName ?? pinnedStep?.name ?? (await storedStepName(record, req.stepIndex)) ?? `#${req.stepIndex}`;
    const transitionKey = makeTransitionKey(req.executionId, req.stepIndex, record.attempt);
    const { errorCode, terminalReason } = ending;
    const errorMessage = ending.message(stepName);
    const envelope: TerminalFailure['envelope'] = {
      tenantId: req.tenantId,
      executionId: req.executionId,
      transitionKey,
      transport,
      platform,
      terminalStatus: 'FAILED',
      createdAtEpochMs: Date.now(),
      terminalReason,
      errorCode,
      errorMessage,
      retryable: ending.retryable,
      // A step no delivery ever reached was not retried by this run.
      retriesObserved: neverTaken ? 0 : record.attempt - 1,
    };
    const committed = await store.commitFailed({
      tenantId: req.tenantId,
      executionId: req.executionId,
      stepIndex: req.stepIndex,
      attempt: record.attempt,
      runId,
      failure: { terminalReason, errorCode, errorMessage, transitionKey, envelope, step: stepName },
    });
    if (!committed.committed) {
      // The record moved since it was read: report what is committed, or read again on Temporal's retry.
      const now = await store.get(req.tenantId, req.executionId);
      const settled = now ? committedTerminal(now, req.stepIndex) : recordMissing(req);
      if (settled) return { details: settled, committed: false };
      throw ApplicationFailure.create({
        type: FailureTypes.retryable,
        message: `execution ${req.executionId} moved while step ${req.stepIndex} was abandoned`,
      });
    }
    metrics?.failed.inc({ terminal_reason: terminalReason, error_code: metrics.code(errorCode) });
    log.warn({
      event: 'execution_failed',
      tenantId: req.tenantId,
      executionId: req.executionId,
      transitionKey,
      correlationId: record.correlationId,
      terminalReason,
      errorCode,
    });
    return { details: { status: 'FAILED', terminalReason, errorCode, stepIndex: req.stepIndex, transitionKey }, committed: true };
  }

  /**
   * The worker's default activity (the SDK runs it for any activity type not registered): a
   * step scheduled under its own type, `<pipeline>:<step>`, does runStep's work. Any other
   * unregistered type is refused as the SDK refuses one, retryable: a worker that has it may take it.
   */
  async function stepByType(req: StepRequest): Promise<StepResult> {
    const type = Context.current().info.activityType;
    if (req === null || typeof req !== 'object' || req.stepName === undefined || type !== stepActivityType(req.pipeline, req.stepName))
      throw ApplicationFailure.create({ type: 'NotFoundError', message: `activity type ${type} is not registered on this worker` });
    return runStep(req);
  }

  return { activities: { runStep, abandonStep, default: stepByType }, endRun };
}

/** The engine's activities, registered on the worker (every member is an activity). */
export function createActivities(deps: EngineDeps) {
  return createEngine(deps).activities;
}

/** Ends the record of a run Temporal closed without the engine (service/run-end-watch.ts), as an abandoned step's is ended. */
export function createRunEnder(deps: EngineDeps): EndRun {
  return createEngine(deps).endRun;
}
