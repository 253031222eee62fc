/**
 * Types shared by the workflow and the activities. Pure data: the workflow bundle
 * imports this file, so it must not import anything from Node.
 */
import type { RetryPolicy } from '../retry';
import type { RedriveMode, TerminalFailureStatus, TerminalReason, Transport } from '../spec-words';

export interface StepPlan {
  name: string;
  transport: Transport;
  command: boolean;
  retry: RetryPolicy;
  /** the step's own deadline; the activity enforces it and Temporal's timeout sits above it */
  timeoutMs: number;
  heartbeatMs: number;
  /**
   * REST/gRPC steps: how long "in progress" answers for the same identity are asked again
   * before the execution parks as REMOTE_OUTCOME_UNKNOWN (pipeline.orchestrator.worker.in-progress-budget).
   * Absent in runs planned before it: the activity then uses the service's configured budget.
   */
  inProgressBudgetMs?: number;
  /**
   * LOCAL/FUNCTION steps on the fast path: run as a Temporal local activity (a marker in the
   * history, several steps in one workflow task). Absent in runs planned before it, and for
   * every other step: a regular activity, so histories recorded before the fast path replay.
   */
  fastPath?: true;
}

/** A step of a run's plan as carried in the workflow's argument: its name, and its settings where they differ from the run's defaults. */
export type StepPlanEntry = Partial<StepPlan> & { name: string };

/** The workflow's argument: everything a run needs to resume from a step. */
export interface PipelineRunInput {
  tenantId: string;
  executionId: string;
  pipeline: string;
  /** the definition version the execution is pinned to; absent in runs started before versions (= 1) */
  pipelineVersion?: number;
  correlationId: string | null;
  /**
   * The run's steps. Each entry holds the step's name and only the settings in which it
   * differs from `stepDefaults` (see `compactPlan`); runs started before `stepDefaults`
   * carry every setting in every entry.
   */
  steps: StepPlanEntry[];
  /** settings shared by the steps, written once instead of in every entry; absent in runs started before it */
  stepDefaults?: Partial<StepPlan>;
  /** the step this run starts from (0 for a fresh execution) */
  resumeStepIndex: number;
  /** the committed attempt of the resume step for this run */
  resumeAttempt: number;
  /** the persisted segment input of the resume step */
  input: unknown;
  /** the dispatch row this run was started from ('start' or a redriveId) */
  dispatchId: string;
  /**
   * true: each step is scheduled under its own activity type (stepActivityType), which names
   * it in the Temporal UI. Absent in runs started before that, which keep scheduling `runStep`
   * so their histories replay (a flag in the input, not patched(): no marker and no
   * TemporalChangeVersion upsert in every execution's history).
   */
  stepActivityTypes?: boolean;
  /** set by a re-drive: the operator attested the ambiguous call made no effect */
  redrive?: {
    redriveId: string;
    intent: RedriveMode;
    /** the bulk re-drive job that admitted it (searchable as PipelineRedriveJob) */
    jobId?: string;
    /** the runId of the run it re-drives, when the record knew it (searchable as PipelineRedriveOf) */
    redriveOf?: string;
  };
}

export interface StepRequest {
  tenantId: string;
  executionId: string;
  pipeline: string;
  /** absent = null: the workflow leaves a null out, as it leaves out every field at its default (bytes in every ActivityTaskScheduled) */
  correlationId?: string | null;
  stepIndex: number;
  /**
   * The step by name and the definition version it belongs to: the worker runs the
   * operator of (pipeline, pipelineVersion, stepName). Absent in requests scheduled before
   * versions: then the step at stepIndex of version 1.
   */
  stepName?: string;
  pipelineVersion?: number;
  transport?: Transport;
  /**
   * The committed attempt as far as the workflow knows it (first Temporal try). This
   * run's retry budget for the step counts from it.
   */
  attempt: number;
  /** first step of the run: the activity marks the record RUNNING and the dispatch STARTED (absent = false) */
  firstOfRun?: boolean;
  dispatchId?: string;
  retry: RetryPolicy;
  timeoutMs: number;
  /** the step plan's in-progress budget (REST/gRPC), when the run was planned with one */
  inProgressBudgetMs?: number;
  input: unknown;
  redriveIntent?: RedriveMode;
  /**
   * Set when this run is not the one its start created (its runId differs from the first
   * run's: a Reset in the Temporal UI or CLI). Every delivery of every step then checks that
   * the run owns the record, so a run reset past its first step cannot run a step again (any
   * run checks it on its first step and on every redelivery).
   */
  notFirstRun?: true;
  /**
   * A fast-path step (a local activity): it answers a record already past it with the step to
   * carry on from (`StepResult.nextStepIndex`).
   */
  fastPath?: true;
  /**
   * A fast-path step that may have run before on a worker that died: the delivery reads the
   * record before the operator, as a Temporal retry does. A local activity re-run after its
   * worker died is at Temporal attempt 1 again, and the dead worker may have committed several
   * steps of its workflow task meanwhile. The workflow sets it on the first fast-path step it
   * runs for real after a replay, or before any ran for real in this worker's copy of the run.
   */
  mayHaveRun?: true;
}

export interface StepResult {
  output: unknown;
  /**
   * A fast-path delivery that found the record already past this step (the worker that ran this
   * workflow task died after committing one or more steps): the step the run carries on from,
   * `output` being that step's committed segment input (the pipeline's output when it is past the last).
   */
  nextStepIndex?: number;
}

/** details[0] of the non-retryable ApplicationFailure a step throws when the execution ends */
export interface TerminalDetails {
  status: TerminalFailureStatus;
  terminalReason: TerminalReason | null;
  errorCode: string;
  stepIndex: number;
  transitionKey: string;
}

/** ApplicationFailure types the engine throws. */
export const FailureTypes = {
  /** the execution ended; the record and the DLQ were committed by the activity */
  terminal: 'PipelineExecutionFailed',
  /** a retryable step failure; retry intent was committed before the throw */
  retryable: 'PipelineStepRetryable',
  /** another run owns the record (a duplicate start, or a Reset): the activity refused to run a step */
  duplicateRun: 'PipelineDuplicateRun',
  /** the workflow's failure for such a run, so the Temporal UI shows it FAILED with why, never Completed */
  notStartedByOrchestrator: 'PipelineRunNotStartedByOrchestrator',
} as const;

/**
 * The activity type a step's attempts are scheduled under, `<pipeline>:<step>`, so the
 * Temporal UI's event list names the step. Never a registered activity's name (pipeline names
 * have no `:`): the worker serves these types with its default activity, which does runStep's work.
 */
export function stepActivityType(pipeline: string, stepName: string): string {
  return `${pipeline}:${stepName}`;
}
