/**
 * What the engine's activities are built from (`EngineDeps`), and the parts the step
 * attempt's adapter (step-attempt.ts) and the step ending's (step-ending.ts) share: the
 * engine they run with, and how a decision becomes a Temporal failure.
 */
import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import type { PipelineRegistry } from '../pipeline/registry';
import type { DefinitionStore } from '../store/definition-store';
import type { EffectStore } from '../store/effect-store';
import type { ExecutionRecord, ExecutionStore } from '../store/execution-store';
import { FailureTypes, type TerminalDetails } from '../workflows/types';
import { storeCommitter, type StepCommitter } from './step-committer';

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

/** The engine the adapters run with: the committer port in place of the stores. */
export interface Engine {
  committer: StepCommitter;
  registry: PipelineRegistry;
  log: Log;
  metrics?: Metrics;
  platform: string;
  inProgressBudgetMs: number;
  definitions?: DefinitionStore;
}

const DEFAULT_IN_PROGRESS_BUDGET_MS = 300_000;

export function engineOf(deps: EngineDeps): Engine {
  return {
    committer: storeCommitter(deps.store, deps.effects),
    registry: deps.registry,
    log: deps.log,
    metrics: deps.metrics,
    platform: deps.platform ?? `node-${process.versions.node}`,
    inProgressBudgetMs: deps.inProgressBudgetMs ?? DEFAULT_IN_PROGRESS_BUDGET_MS,
    definitions: deps.definitions,
  };
}

/**
 * The one way an activity ends a run: a non-retryable failure of the type the workflow's
 * retry policy lists as non-retryable, always carrying the TerminalDetails the workflow
 * reads. Without the details the workflow would take the step for abandoned; with another
 * type Temporal would retry it.
 */
export function terminalFailure(details: TerminalDetails, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureTypes.terminal, nonRetryable: true, message, details: [details] });
}

/** A failure Temporal retries (from the stored state, or with `nextRetryDelay`). */
export function retryableFailure(message: string, nextRetryDelay?: number): ApplicationFailure {
  return ApplicationFailure.create({ type: FailureTypes.retryable, message, ...(nextRetryDelay !== undefined ? { nextRetryDelay } : {}) });
}

/** The Temporal run this delivery belongs to: what `begin` writes on the record and every commit is fenced by. */
export function runOf(activity: Context): string {
  return activity.info.workflowExecution?.runId ?? 'unknown';
}

/** A superseded run ends with the outcome it committed last: logged, for the operator who wonders why the run failed again. */
export function logSuperseded(
  engine: Engine,
  req: { tenantId: string; executionId: string },
  record: ExecutionRecord,
  runId: string,
  transitionKey: string,
): void {
  engine.log.warn({
    event: 'execution_superseded_run_refused',
    tenantId: req.tenantId,
    executionId: req.executionId,
    runId,
    ownerRunId: record.runId,
    status: record.status,
    transitionKey,
  });
}
