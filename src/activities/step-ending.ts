/**
 * Ending a step from outside its attempt, a thin adapter over its rules (step-rules.ts):
 * `abandonStep` when Temporal gave up on a step without the activity committing an outcome,
 * `endRun` when Temporal closed a run without the engine ending it. Both commit FAILED and a
 * DLQ envelope for the step the record is at, fenced by the run's ownership of the record.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { StepErrorCode } from '../errors';
import type { EndedRun, RunEnding } from '../service/run-end-watch';
import type { TerminalReason } from '../spec-words';
import type { ExecutionRecord } from '../store/execution-store';
import { FailureTypes, type TerminalDetails } from '../workflows/types';
import { logSuperseded, retryableFailure, runOf, type Engine } from './engine-context';
import { decideEnd, decideEndLost, failureEnvelope, notOwnerEnd, recordMissing, takesNeverTaken, type AbandonRequest, type EndDecision } from './step-rules';

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

/** Ends the record of a run Temporal closed without the engine (what service/run-end-watch.ts calls). */
export type RunEnder = (run: EndedRun) => Promise<'ended' | 'moved'>;

interface Ending {
  errorCode: StepErrorCode;
  terminalReason: TerminalReason;
  retryable: boolean;
  message: (stepName: string) => string;
}

/**
 * Temporal gave up on a step without the activity committing an outcome (the worker
 * kept dying past the redelivery allowance). Commit FAILED and a DLQ envelope now.
 */
export async function abandonStep(engine: Engine, req: AbandonRequest): Promise<TerminalDetails> {
  // The run is read from the activity's context once the record is known to exist (tests call this outside one).
  const ended = await endStep(engine, req, () => runOf(Context.current()), {
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
export async function endRun(engine: Engine, run: EndedRun): Promise<'ended' | 'moved'> {
  const ending = RUN_ENDINGS[run.ending];
  // Who and why when Temporal recorded it (Terminate), else how such a run usually ends.
  const by = run.terminatedBy;
  const how = by ? `by ${by.identity || 'an unnamed client'} (reason: "${by.reason}")` : ending.how;
  const ended = await endStep(
    engine,
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
async function storedStepName(engine: Engine, record: ExecutionRecord, stepIndex: number): Promise<string | undefined> {
  const shape = await engine.definitions?.find(record.pipeline, record.pipelineVersion, record.definitionFingerprint);
  return shape?.steps[stepIndex];
}

/** Commits FAILED and a DLQ envelope for the step the record is at, fenced by the run's ownership of the record. */
async function endStep(
  engine: Engine,
  req: AbandonRequest,
  runOfDelivery: () => string,
  ending: Ending,
): Promise<{ details: TerminalDetails; committed: boolean }> {
  const { committer } = engine;
  const read = await committer.read(req.tenantId, req.executionId);
  if (!read) return { details: recordMissing(req), committed: false };
  const runId = runOfDelivery();
  // A first step given up before any delivery took the record: take it now, as that step would have, and end it below.
  const neverTaken = takesNeverTaken(read, req);
  const record = neverTaken ? await committer.begin({ tenantId: req.tenantId, executionId: req.executionId, runId, dispatchId: req.dispatchId ?? null }) : read;
  const decision = decideEnd(req, record, runId, neverTaken);
  switch (decision.kind) {
    case 'missing':
    case 'already':
      return { details: decision.details, committed: false };
    case 'not_owner': {
      // A run that does not own the record commits nothing on it: it ends as it committed, or as a run without the record.
      const committed = await committer.lastOutcomeOfRun({ tenantId: req.tenantId, executionId: req.executionId, runId });
      const details = notOwnerEnd(req, decision.record, committed);
      if (committed) logSuperseded(engine, req, decision.record, runId, details.transitionKey);
      return { details, committed: false };
    }
    case 'commit':
      return commitEnd(engine, req, runId, ending, decision);
  }
}

async function commitEnd(
  engine: Engine,
  req: AbandonRequest,
  runId: string,
  ending: Ending,
  decision: Extract<EndDecision, { kind: 'commit' }>,
): Promise<{ details: TerminalDetails; committed: boolean }> {
  const { committer, log, metrics } = engine;
  const held = decision.record;
  const pinnedStep = engine.registry.find(held.pipeline, held.pipelineVersion)?.steps[req.stepIndex];
  const transport = req.transport ?? pinnedStep?.transport ?? 'LOCAL';
  const stepName = req.stepName ?? pinnedStep?.name ?? (await storedStepName(engine, held, req.stepIndex)) ?? `#${req.stepIndex}`;
  const { transitionKey, attempt, retriesObserved } = decision;
  const { errorCode, terminalReason } = ending;
  const errorMessage = ending.message(stepName);
  const envelope = failureEnvelope({
    tenantId: req.tenantId,
    executionId: req.executionId,
    transitionKey,
    transport,
    platform: engine.platform,
    terminalReason,
    errorCode,
    errorMessage,
    retryable: ending.retryable,
    retriesObserved,
    now: Date.now(),
  });
  const committed = await committer.commit({
    kind: 'failed',
    key: { tenantId: req.tenantId, executionId: req.executionId, stepIndex: req.stepIndex, attempt, runId },
    failure: { terminalReason, errorCode, errorMessage, transitionKey, envelope, step: stepName },
  });
  if (!committed.committed) {
    // The record moved since it was read: report what is committed, or read again on Temporal's retry.
    const lost = decideEndLost(req, await committer.read(req.tenantId, req.executionId));
    if (lost.kind === 'settled') return { details: lost.details, committed: false };
    throw retryableFailure(lost.message);
  }
  metrics?.failed.inc({ terminal_reason: terminalReason, error_code: metrics.code(errorCode) });
  log.warn({
    event: 'execution_failed',
    tenantId: req.tenantId,
    executionId: req.executionId,
    transitionKey,
    correlationId: held.correlationId,
    terminalReason,
    errorCode,
  });
  return { details: { status: 'FAILED', terminalReason, errorCode, stepIndex: req.stepIndex, transitionKey }, committed: true };
}
