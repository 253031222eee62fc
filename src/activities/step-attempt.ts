/**
 * The step attempt's activity, a thin adapter over its rules (step-rules.ts): it reads what
 * the rules need through the committer port, invokes the operator, and applies each decision
 * (a commit through the port, a Temporal failure, an answer to the workflow).
 *
 * `runStep` is the whole life of one step attempt: learn the committed attempt (only when it
 * may differ from what the workflow knows), claim the Command effect, invoke the operator, and
 * commit the outcome in one statement. On a retryable failure it commits the retry intent
 * first and then asks Temporal to retry after the computed delay.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { idempotencyKey, transitionKey as makeTransitionKey } from '../ids';
import type { StepResolution } from '../pipeline/registry';
import type { EffectChange, ExecutionRecord, StepKey } from '../store/execution-store';
import type { Transport } from '../spec-words';
import { DeliveryUnconfirmedError, RemoteOutcomeUnknownError, WorkerUnreachableError } from '../transports/remote';
import { FailureTypes, stepActivityType, type StepRequest, type StepResult } from '../workflows/types';
import { logSuperseded, retryableFailure, runOf, terminalFailure, type Engine } from './engine-context';
import { deliverWhileInProgress, InProgressBudgetExhaustedError, type InProgressProgress } from './in-progress';
import { invokeStep } from './invoke-step';
import { RejectBuffer, type PendingReject } from './rejects';
import { classifyFailure, nonRetryableErrorTypesOf, toJsonOutput, type StepFailure } from './step-failure';
import {
  afterDeliveryError,
  behindRollout,
  decideAttempt,
  decideAttemptEnd,
  decideBeforeInvoke,
  decideClaim,
  decideFailedAttempt,
  decideLostCommit,
  decideRefusal,
  failureEnvelope,
  foreignRunReason,
  looksForLegacyRun,
  parkDecision,
  readsRecord,
  supersededMessage,
  type AttemptDecision,
  type AttemptState,
  type RecordDecision,
  type UnknownOutcome,
} from './step-rules';

/** One attempt as the adapter runs it: the request, its committed attempt and identity, and the fields every log line of it carries. */
interface Attempt {
  req: StepRequest;
  attempt: number;
  transitionKey: string;
  stepKey: StepKey;
  transport: Transport;
  logFields: { tenantId: string; executionId: string; transitionKey: string; correlationId: string | null; step: string; pipelineVersion: number };
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

/**
 * The operator of (pipeline, pinned version, step name). A request from before versions
 * names no step: it ran the only definition there was, version 1, by position.
 */
function resolveStep(engine: Engine, req: StepRequest): StepResolution {
  const version = req.pipelineVersion ?? 1;
  const stepName = req.stepName ?? engine.registry.find(req.pipeline, version)?.steps[req.stepIndex]?.name;
  if (stepName === undefined) return engine.registry.resolve(req.pipeline, version, `#${req.stepIndex}`);
  return engine.registry.resolve(req.pipeline, version, stepName);
}

/** Applies a record decision that ends the delivery (any but `run`): the answer to the workflow, or the failure it throws. */
async function answer(engine: Engine, req: StepRequest, decision: Exclude<RecordDecision, { kind: 'run' }>, afterOperator: boolean): Promise<StepResult> {
  switch (decision.kind) {
    case 'missing':
      throw terminalFailure(decision.details, `execution ${req.executionId} has no record`);
    case 'not_owner':
      throw await refuseRun(engine, req, decision.record, afterOperator);
    case 'settled':
      return decision.result;
    case 'terminal':
      throw terminalFailure(decision.details, decision.message);
    case 'moved':
      // The state moved under us (another delivery committed a retry): let Temporal try again from the stored state.
      throw retryableFailure(decision.message);
  }
}

/** A commit matched no row: read the record again and answer as the rules say. */
async function settle(engine: Engine, req: StepRequest): Promise<StepResult> {
  const record = await engine.committer.read(req.tenantId, req.executionId);
  const decision = decideLostCommit(req, record, runOf(Context.current()));
  if (decision.kind === 'run') throw new Error(`execution ${req.executionId}: a lost commit never runs the step again`);
  return answer(engine, req, decision, true);
}

/**
 * The answer to a delivery of a run that does not own the record: superseded (it committed an
 * outcome once), or foreign (it never did). Neither commits. Refused before the operator, the
 * delivery ran no step; refused at the commit (`afterOperator`), its outcome was not kept.
 */
async function refuseRun(engine: Engine, req: StepRequest, record: ExecutionRecord, afterOperator: boolean): Promise<ApplicationFailure> {
  const { committer, log } = engine;
  const runId = runOf(Context.current());
  const committed = await committer.lastOutcomeOfRun({ tenantId: req.tenantId, executionId: req.executionId, runId });
  // Commits from before run ids were logged with none: a later step's delivery then most likely comes from such a run.
  const legacy =
    committed === null &&
    looksForLegacyRun(req) &&
    (await committer.lastOutcomeOfRun({ tenantId: req.tenantId, executionId: req.executionId, runId: null })) !== null;
  const refusal = decideRefusal(req, committed, legacy);
  if (refusal.kind === 'superseded') {
    logSuperseded(engine, req, record, runId, refusal.details.transitionKey);
    return terminalFailure(refusal.details, supersededMessage(req, record, refusal.committed, refusal.details, afterOperator));
  }
  const failedCommandRetained = record.status === 'FAILED' && (await committer.effectRetained(record.tenantId, record.executionId, record.currentStepIndex));
  const reason = foreignRunReason(req, record, { afterOperator, legacy: refusal.legacy, failedCommandRetained });
  await committer.noteForeignRun({
    tenantId: req.tenantId,
    executionId: req.executionId,
    runId,
    ownerRunId: record.runId,
    recordStatus: record.status,
    reason,
  });
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

/** The identity's delivery is noted before anything is sent; a later unreachable worker is then an unconfirmed delivery (`afterDeliveryError`). */
async function sentOnce<T>(engine: Engine, key: StepKey, call: () => Promise<T>): Promise<() => Promise<T>> {
  let sent = (await engine.committer.noteRemoteDelivery(key)).earlier;
  return async () => {
    try {
      return await call();
    } catch (err) {
      const unreachable = err instanceof WorkerUnreachableError;
      const after = afterDeliveryError(sent, unreachable);
      sent = after.sent;
      if (after.unconfirmed && err instanceof WorkerUnreachableError)
        throw new DeliveryUnconfirmedError(err.protocol, err.target, null, `${err.code} after an earlier delivery of this identity was sent`);
      throw err;
    }
  };
}

export async function runStep(engine: Engine, request: StepRequest): Promise<StepResult> {
  // The workflow leaves out fields at their default (null, false); older runs still send them.
  const req = { ...request, correlationId: request.correlationId ?? null };
  const activity = Context.current();
  const resolved = resolveStep(engine, req);
  const behind = behindRollout(resolved);
  if (behind !== undefined) throw retryableFailure(behind);

  let attempt = req.attempt;
  if (readsRecord(req, activity.info.attempt)) {
    const record = await engine.committer.begin({
      tenantId: req.tenantId,
      executionId: req.executionId,
      runId: runOf(activity),
      dispatchId: req.dispatchId ?? null,
    });
    const decision = decideAttempt(req, record, runOf(activity));
    if (decision.kind !== 'run') return answer(engine, req, decision, false);
    attempt = decision.attempt;
  }
  const transitionKey = makeTransitionKey(req.executionId, req.stepIndex, attempt);
  const stepKey: StepKey = { tenantId: req.tenantId, executionId: req.executionId, stepIndex: req.stepIndex, attempt, runId: runOf(activity) };
  const stepName = resolved.found ? resolved.step.name : (req.stepName ?? `#${req.stepIndex}`);
  const at: Attempt = {
    req,
    attempt,
    transitionKey,
    stepKey,
    transport: resolved.found ? resolved.step.transport : (req.transport ?? 'LOCAL'),
    logFields: {
      tenantId: req.tenantId,
      executionId: req.executionId,
      transitionKey,
      correlationId: req.correlationId,
      step: stepName,
      pipelineVersion: req.pipelineVersion ?? 1,
    },
  };
  const fail = (failure: StepFailure) => apply(engine, at, decideFailedAttempt(failure, stateOf(at, undefined)));

  const before = decideBeforeInvoke(
    req,
    resolved.found ? { name: resolved.step.name, command: resolved.step.command === true } : { name: stepName, goneReason: resolved.reason },
  );
  if (before.kind === 'fail') return fail(before.failure);
  if (!resolved.found) throw new Error(`step ${req.stepIndex} (${stepName}) is not resolved`);
  const step = resolved.step;

  let effect: EffectChange | undefined;
  if (before.kind === 'claim') {
    const claim = await engine.committer.claimEffect({ ...stepKey, stepName: step.name, transitionKey, onlyNew: before.onlyNew });
    const claimed = decideClaim(claim, req.stepIndex, transitionKey);
    if (claimed.kind === 'fail') return fail(claimed.failure);
    if (claimed.kind === 'reuse') {
      // Never invoked again: the stored result is committed and reused.
      const committed = await engine.committer.commit({ kind: 'succeeded', key: stepKey, output: claimed.output });
      if (!committed.committed) return settle(engine, req);
      if (committed.status === 'SUCCEEDED') engine.metrics?.succeeded.inc();
      return { output: claimed.output };
    }
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
      log: engine.log,
      onDeadlineWarning: (protocol: string) => engine.metrics?.deadlineWarnings.inc({ protocol }),
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
  const invokedAt = new Date();
  const remote = step.transport === 'REST' || step.transport === 'GRPC';
  let output: unknown;
  try {
    const raw = remote
      ? await deliverWhileInProgress(await sentOnce(engine, stepKey, invoke), {
          transitionKey,
          budgetMs: req.inProgressBudgetMs ?? engine.inProgressBudgetMs,
          callDeadlineMs: req.timeoutMs,
          hardStopAt: activity.info.currentAttemptScheduledTimestampMs + activity.info.startToCloseTimeoutMs,
          resumed: activity.info.heartbeatDetails,
          heartbeat: (current) => {
            progress = current;
            activity.heartbeat(current);
          },
          heartbeatEveryMs: heartbeatEveryMs ?? 1000,
          signal: activity.cancellationSignal,
          onAnswer: (current, delayMs) =>
            engine.log.info({ event: 'remote_transition_in_progress', ...at.logFields, attempt, answers: current.answers, delayMs }),
        })
      : await invoke();
    output = toJsonOutput(raw);
  } catch (err) {
    const state = stateOf(at, effect);
    if (supersededByTemporal(activity)) {
      engine.log.info({
        event: 'step_attempt_superseded',
        ...at.logFields,
        attempt,
        reason: String((activity.cancellationSignal.reason as { message?: unknown } | undefined)?.message ?? ''),
      });
      return apply(engine, at, decideAttemptEnd({ kind: 'superseded' }, state), { cancellation: activity.cancellationSignal.reason });
    }
    const unknown = unknownOutcome(err);
    if (unknown) return apply(engine, at, decideAttemptEnd({ kind: 'outcome_unknown', ...unknown, invokedAt, now: Date.now() }, state));
    const failure = classifyFailure(err, { nonRetryableErrorTypes: nonRetryableErrorTypesOf(step, resolved.pipeline) });
    return apply(engine, at, decideAttemptEnd({ kind: 'failed', failure }, state));
  }
  return apply(engine, at, decideAttemptEnd({ kind: 'returned', output }, stateOf(at, effect)), { rejects: rejects.pending, stepName: step.name });
}

function stateOf(at: Attempt, effect: EffectChange | undefined): AttemptState {
  return {
    stepIndex: at.req.stepIndex,
    attempt: at.attempt,
    transitionKey: at.transitionKey,
    startAttempt: at.req.attempt,
    retry: at.req.retry,
    callDeadlineMs: at.req.timeoutMs,
    effect,
  };
}

/** The remote outcome is unknown: the caller deadline passed, or the in-progress budget ran out. */
function unknownOutcome(err: unknown): { outcome: UnknownOutcome; message: string } | undefined {
  if (err instanceof RemoteOutcomeUnknownError) {
    return {
      outcome: { kind: 'deadline', protocol: err.protocol, target: err.target, startedAt: err.startedAt, deadlineMs: err.deadlineMs, elapsedMs: err.elapsedMs },
      message: err.message,
    };
  }
  if (err instanceof InProgressBudgetExhaustedError) {
    return { outcome: { kind: 'in_progress_budget', protocol: err.protocol, target: err.target, evidence: err.evidence }, message: err.message };
  }
  return undefined;
}

/** What only the adapter holds: the rejects buffered by the operator, the cancellation Temporal gave. */
interface Held {
  rejects?: PendingReject[];
  stepName?: string;
  cancellation?: unknown;
}

/** Applies an attempt's decision: the commit through the port, then the answer or the Temporal failure. */
async function apply(engine: Engine, at: Attempt, decision: AttemptDecision, held: Held = {}): Promise<StepResult> {
  const { committer, log, metrics } = engine;
  const { req, attempt, transitionKey, stepKey, logFields } = at;
  switch (decision.kind) {
    case 'superseded':
      // Temporal already gave this attempt up (a heartbeat it did not get in time) or its run is gone: commit nothing.
      throw held.cancellation;

    case 'commit_succeeded': {
      const { output } = decision;
      const pending = held.rejects ?? [];
      const committed = await committer.commit({
        kind: 'succeeded',
        key: stepKey,
        output,
        effect: decision.effect,
        rejects: pending.length > 0 ? { transitionKey, step: held.stepName ?? logFields.step, items: pending } : undefined,
      });
      if (!committed.committed) return settle(engine, req);
      if (pending.length > 0) {
        log.info({ event: 'item_rejects_committed', ...logFields, count: pending.length });
        for (const item of pending) metrics?.rejects.inc({ error_code: metrics.code(item.errorCode) });
      }
      if (committed.status === 'SUCCEEDED') metrics?.succeeded.inc();
      log.debug({ event: 'execution_step_succeeded', ...logFields, version: committed.version });
      return { output };
    }

    case 'park': {
      const { remoteCall } = decision;
      const committed = await committer.commit({
        kind: 'outcome_unknown',
        key: stepKey,
        errorCode: 'REMOTE_OUTCOME_UNKNOWN',
        errorMessage: decision.errorMessage,
        remoteCall,
        effect: decision.effect,
      });
      if (!committed.committed) return settle(engine, req);
      const { step: _step, ...ids } = logFields;
      metrics?.outcomeUnknown.inc({ protocol: remoteCall.protocol });
      log.error({
        event: 'remote_transition_outcome_unknown',
        ...ids,
        attempt,
        protocol: remoteCall.protocol,
        target: remoteCall.target,
        elapsedMs: remoteCall.elapsedMs,
        deadlineMs: remoteCall.deadlineMs,
        ...(remoteCall.inProgress
          ? { inProgressAnswers: remoteCall.inProgress.answers, inProgressBudgetMs: remoteCall.inProgress.budgetMs, decision: parkDecision(remoteCall) }
          : { decision: parkDecision(remoteCall) }),
      });
      throw terminalFailure(decision.details, decision.errorMessage);
    }

    case 'redeliver': {
      // Not a failed attempt: the worker is still on this identity. Deliver the same one again; commit nothing.
      const { failure } = decision;
      log.info({ event: 'remote_transition_in_progress', ...logFields, attempt });
      throw retryableFailure(`${failure.errorCode}: ${failure.errorMessage}`, decision.delayMs);
    }

    case 'commit_retry': {
      const { failure, delayMs } = decision;
      const committed = await committer.commit({
        kind: 'retry',
        key: stepKey,
        delayMs,
        errorCode: failure.errorCode,
        errorMessage: failure.errorMessage,
        effect: decision.effect,
      });
      if (!committed.committed) return settle(engine, req);
      log.info({ event: 'execution_step_retry_scheduled', ...logFields, errorCode: failure.errorCode, attempt, nextAttempt: decision.nextAttempt, delayMs });
      metrics?.retries.inc({ error_code: metrics.code(failure.errorCode) });
      // Names the committed attempt, which Temporal's attempt counter does not (it starts at 1 in each run and counts redeliveries).
      throw retryableFailure(
        `transition ${transitionKey} failed, retry as attempt ${decision.nextAttempt}: ${failure.errorCode}: ${failure.errorMessage}`,
        delayMs,
      );
    }

    case 'commit_failed': {
      const { failure, terminalReason, retriesObserved } = decision;
      const envelope = failureEnvelope({
        tenantId: req.tenantId,
        executionId: req.executionId,
        transitionKey,
        transport: at.transport,
        platform: failure.platform ?? engine.platform,
        terminalReason,
        errorCode: failure.errorCode,
        errorMessage: failure.errorMessage,
        retryable: failure.retryable,
        retriesObserved,
        now: Date.now(),
      });
      const committed = await committer.commit({
        kind: 'failed',
        key: stepKey,
        failure: { terminalReason, errorCode: failure.errorCode, errorMessage: failure.errorMessage, transitionKey, envelope, step: logFields.step },
        effect: decision.effect,
      });
      if (!committed.committed) return settle(engine, req);
      log.warn({ event: 'execution_failed', ...logFields, terminalReason, errorCode: failure.errorCode, retriesObserved, version: committed.version });
      metrics?.failed.inc({ terminal_reason: terminalReason, error_code: metrics.code(failure.errorCode) });
      throw terminalFailure(decision.details, `transition ${transitionKey} failed, ${terminalReason}: ${failure.errorCode}: ${failure.errorMessage}`);
    }
  }
}

/**
 * The worker's default activity (the SDK runs it for any activity type not registered): a
 * step scheduled under its own type, `<pipeline>:<step>`, does runStep's work. Any other
 * unregistered type is refused as the SDK refuses one, retryable: a worker that has it may take it.
 */
export async function stepByType(engine: Engine, req: StepRequest): Promise<StepResult> {
  const type = Context.current().info.activityType;
  if (req === null || typeof req !== 'object' || req.stepName === undefined || type !== stepActivityType(req.pipeline, req.stepName))
    throw ApplicationFailure.create({ type: 'NotFoundError', message: `activity type ${type} is not registered on this worker` });
  return runStep(engine, req);
}
