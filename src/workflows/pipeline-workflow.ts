/**
 * One execution = one run of this workflow. Each step is one activity (its type names the
 * pipeline and the step, `<pipeline>:<step>`; `runStep` in runs from before that; a local
 * activity for a step on the fast path, docs/decisions.md) that invokes
 * the operator and commits the transition to Postgres; retries are Temporal's own
 * activity retries, timed by the activity through `nextRetryDelay`, so a retried attempt
 * adds no history events. The workflow only sequences steps. A run that ends FAILED or
 * REMOTE_OUTCOME_UNKNOWN records that in the `PipelineStatus` search attribute and fails;
 * a successful run just completes (Temporal's ExecutionStatus says so, and an upsert
 * on every success would cost a history event and a visibility write per execution).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { EngineActivities } from '../activities/engine-activities';
import { PipelineRedriveJob, PipelineRedriveOf, PipelineStatus } from './search-attributes';
import { planStep } from './plan';
import { FailureTypes, stepActivityType, type PipelineRunInput, type StepPlan, type TerminalDetails } from './types';

/** Above the step's own deadline, so Temporal never times out a call the activity is still judging. */
const TEMPORAL_TIMEOUT_MARGIN_MS = 10_000;
/** Redeliveries (worker crashes) allowed beyond the step's retry budget before the run gives up. */
const REDELIVERY_ALLOWANCE = 10;

/**
 * The activity's summary in the Temporal UI: the step, the transition identity its first
 * Temporal attempt runs as and, when the step may retry, the last identity its retries can
 * reach. It is written once, when the activity is scheduled, and one activity runs every retry
 * of the step in this run (each a new transition attempt, up to `retry.limit` more), so it
 * names the range, not one attempt (Temporal's own attempt counter counts redeliveries and
 * starts at 1 in every run; each retried attempt's failure message names its own identity).
 * Kept short: it is stored in every ActivityTaskScheduled event and sent with the history.
 */
function activitySummary(
  step: Pick<StepPlan, 'name' | 'transport' | 'command' | 'fastPath' | 'retry'>,
  index: number,
  executionId: string,
  attempt: number,
): string {
  const last = attempt + Math.max(0, step.retry.limit);
  const retries = last > attempt ? `, retries up to ${executionId}:${index}:${last}` : '';
  return `step ${index} ${step.name} · ${step.transport}${step.command ? ' · command' : ''}${step.fastPath ? ' · fast path' : ''} · transition ${executionId}:${index}:${attempt}${retries}`;
}

function activitiesFor(step: StepPlan, index: number, executionId: string, attempt: number) {
  const retry = {
    initialInterval: Math.max(1, step.retry.waitMs),
    backoffCoefficient: 2,
    maximumInterval: Math.max(1, step.retry.waitMs, step.retry.maxBackoffMs),
    maximumAttempts: step.retry.limit + 1 + REDELIVERY_ALLOWANCE,
    nonRetryableErrorTypes: [FailureTypes.terminal, FailureTypes.duplicateRun],
  };
  const summary = activitySummary(step, index, executionId, attempt);
  // The fast path: a local activity, run by this workflow task's worker, its result a marker in the history.
  if (step.fastPath) return proxyLocalActivities<EngineActivities>({ startToCloseTimeout: step.timeoutMs + TEMPORAL_TIMEOUT_MARGIN_MS, retry, summary });
  return proxyActivities<EngineActivities>({
    // A remote step's activity keeps asking a worker that answers "in progress" within its budget, then one more call.
    startToCloseTimeout: step.timeoutMs + (step.inProgressBudgetMs ?? 0) + TEMPORAL_TIMEOUT_MARGIN_MS,
    heartbeatTimeout: step.heartbeatMs,
    retry,
    summary,
  });
}

export async function pipelineWorkflow(run: PipelineRunInput): Promise<unknown> {
  let segment = run.input;
  // A Reset gives the workflow a new runId but keeps the first run's: such a run checks, at
  // every step's first delivery too, that it owns the record (the orchestrator's own runs are
  // never reset copies; they check it on their first step and on every redelivery).
  const info = workflowInfo();
  const notFirstRun = info.runId !== info.firstExecutionRunId;
  // Fast path: whether a step of this copy of the run has run and committed for real (not replayed
  // from its marker, not settled from the record). Until one has, a step may be one a worker that
  // died ran or retried (its workflow task lost), so it reads the record first; after one has, the
  // record's step and attempt are the ones this copy knows.
  let ranForReal = false;
  for (let index = run.resumeStepIndex; index < run.steps.length;) {
    const step = planStep(run, index);
    const firstOfRun = index === run.resumeStepIndex;
    const attempt = firstOfRun ? run.resumeAttempt : 1;
    const activities = activitiesFor(step, index, run.executionId, attempt);
    // The step's own activity type (`<pipeline>:<step>`) names it in the Temporal UI's event list.
    const runStep = run.stepActivityTypes
      ? (activities as unknown as Record<string, EngineActivities['runStep']>)[stepActivityType(run.pipeline, step.name)]
      : activities.runStep;
    try {
      // Fields at their default (a null correlationId, firstOfRun false) are left out: every byte
      // here is stored in the step's ActivityTaskScheduled event and sent with the history.
      const result = await runStep({
        tenantId: run.tenantId,
        executionId: run.executionId,
        pipeline: run.pipeline,
        ...(run.correlationId !== null ? { correlationId: run.correlationId } : {}),
        stepIndex: index,
        // Resolved by name in the pinned version, never by position in the newest definition.
        stepName: step.name,
        pipelineVersion: run.pipelineVersion ?? 1,
        transport: step.transport,
        attempt,
        ...(firstOfRun ? { firstOfRun, dispatchId: run.dispatchId } : {}),
        retry: step.retry,
        timeoutMs: step.timeoutMs,
        ...(step.inProgressBudgetMs !== undefined ? { inProgressBudgetMs: step.inProgressBudgetMs } : {}),
        input: segment,
        redriveIntent: firstOfRun ? run.redrive?.intent : undefined,
        ...(notFirstRun ? { notFirstRun: true as const } : {}),
        ...(step.fastPath ? { fastPath: true as const, ...(ranForReal ? {} : { mayHaveRun: true as const }) } : {}),
      });
      // Not after an answer settled from the record (nextStepIndex): the next step's committed attempt is unknown here.
      if (step.fastPath && !workflowInfo().unsafe.isReplaying && result.nextStepIndex === undefined) ranForReal = true;
      segment = result.output;
      // Only a fast-path step answers with the step to carry on from (the record was already past it).
      index = step.fastPath && result.nextStepIndex !== undefined ? Math.max(index + 1, result.nextStepIndex) : index + 1;
    } catch (err) {
      if (failureType(err) === FailureTypes.duplicateRun) {
        // A run the orchestrator did not start ends FAILED with why, so the Temporal UI never
        // shows a reset FAILED execution as Completed. Runs from before this change completed.
        if (!patched('pipeline-foreign-run-fails')) return { duplicateRun: true };
        dropInheritedLineage();
        throw ApplicationFailure.create({
          type: FailureTypes.notStartedByOrchestrator,
          nonRetryable: true,
          message: stepFailure(err)!.message,
        });
      }
      const terminal =
        terminalDetails(err) ??
        (await activities.abandonStep({
          tenantId: run.tenantId,
          executionId: run.executionId,
          stepIndex: index,
          stepName: step.name,
          transport: step.transport,
          reason: describe(err),
          // A first step given up before it took the record: the run ends the record still QUEUED for its dispatch.
          ...(firstOfRun && run.dispatchId ? { dispatchId: run.dispatchId } : {}),
        }));
      upsertSearchAttributes([{ key: PipelineStatus, value: terminal.status }]);
      // A fast-path delivery may end the run at a later step its dead worker committed: the message names that step.
      const at = step.fastPath && terminal.stepIndex !== index && terminal.stepIndex < run.steps.length ? terminal.stepIndex : index;
      throw ApplicationFailure.create({
        type: FailureTypes.terminal,
        nonRetryable: true,
        message: `execution ${run.executionId} ${terminal.status} at step ${at} (${at === index ? step.name : planStep(run, at).name}), transition ${terminal.transitionKey}: ${terminal.errorCode}${terminal.terminalReason ? ` / ${terminal.terminalReason}` : ''}`,
        details: [terminal],
        cause: err instanceof Error ? err : undefined,
      });
    }
  }
  return segment;
}

/**
 * A run the orchestrator did not start (a Temporal Reset's copy, a second start of a dispatch
 * another run owns) carries the search attributes of the run it copies, so a copy of a
 * re-drive's run, or of a run a bulk job admitted, would be listed as that re-drive
 * (`PipelineRedriveOf`) or that job's (`PipelineRedriveJob`) though neither made it. When its
 * step refuses it, it removes both before it fails. Decided by the refusal, which is in the
 * history (a replay's runId is the original run's, so the runId cannot tell a copy from its
 * original there); behind a patch, so runs refused before it replay without the upsert.
 */
function dropInheritedLineage(): void {
  const attributes = workflowInfo().typedSearchAttributes;
  const inherited = [PipelineRedriveJob, PipelineRedriveOf].filter((key) => attributes.get(key) !== undefined);
  if (inherited.length === 0 || !patched('pipeline-reset-drops-lineage')) return;
  upsertSearchAttributes(inherited.map((key) => ({ key, value: null })));
}

/**
 * The step's own ApplicationFailure. A regular activity's reaches the workflow wrapped in an
 * ActivityFailure; a local activity's (the fast path's) reaches it bare, as the step threw it.
 * Runs from before the bare form was read (behind the pipeline-fast-path-bare-failure patch) took a
 * fast-path terminal failure for an unknown one and called abandonStep (one more marker), and a
 * fast-path refusal of a run the orchestrator did not start likewise: they replay that way.
 * The patch is asked for only where the decision differs, so other failures record no marker.
 */
function stepFailure(err: unknown): ApplicationFailure | undefined {
  if (err instanceof ActivityFailure) return err.cause instanceof ApplicationFailure ? err.cause : undefined;
  const decisive = err instanceof ApplicationFailure && (err.type === FailureTypes.terminal || err.type === FailureTypes.duplicateRun);
  return decisive && patched('pipeline-fast-path-bare-failure') ? err : undefined;
}

function failureType(err: unknown): string | undefined | null {
  return stepFailure(err)?.type;
}

/** The terminal outcome the activity already committed, if that is why it failed. */
function terminalDetails(err: unknown): TerminalDetails | undefined {
  return failureType(err) === FailureTypes.terminal ? (stepFailure(err)!.details?.[0] as TerminalDetails) : undefined;
}

/** Either form: a regular activity's wrapped failure is described by its cause, a local activity's by itself. */
function describe(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof Error ? `${cause.name}: ${cause.message}`.slice(0, 500) : 'unknown failure';
}
