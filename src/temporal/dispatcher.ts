/**
 * Starts workflow runs from dispatch rows (the outbox written in the same transaction
 * as the record's admission), and the due-execution sweeper that retries the ones whose
 * start failed or whose starter died. A starter takes a lease on the row with a
 * conditional update first, so two sweepers never start the same dispatch at once; a
 * start that still slips through twice is caught by the run's first step (see
 * ExecutionStore.begin) and ends quietly.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { status as grpcStatus } from '@grpc/grpc-js';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Log } from '../log';
import { PeriodicTask } from '../periodic-task';
import { TemporalCallTimeoutError, withCallDeadline } from './call-deadline';
import type { PipelineRegistry } from '../pipeline/registry';
import type { VersionedPipeline } from '../pipeline/define';
import type { Db } from '../store/db';
import { DispatchStore, type DispatchSpec } from '../store/dispatch-store';
import type { DispatchLease, ExecutionRecord } from '../store/execution-store';
import { PipelineExecutionId, PipelineForkedFrom, PipelineName, PipelineRedriveJob, PipelineRedriveOf, PipelineTenant } from '../workflows/search-attributes';
// The workflow function itself (not its name): `args` is then type-checked against its parameter.
import { pipelineWorkflow } from '../workflows/pipeline-workflow';
import { compactPlan, planStep } from '../workflows/plan';
import type { PipelineRunInput } from '../workflows/types';
import { withTraceCarrier } from '../trace-context';
import type { DispatchOutcome as DispatchOutcomeWord } from '../spec-words';
import { errorLine } from '../errors';

/** What an admission asks the run to do: its dispatch row's `workflow_args`, parsed when the row is read (store/dispatch-store.ts). */
export type { DispatchSpec };

export interface DispatchOutcome {
  dispatch: DispatchOutcomeWord;
  runId: string | null;
  /** pending because Temporal did not answer in time (or was unreachable), not because of this row */
  temporalUnavailable?: boolean;
}

const LEASE_MS = 30_000;
/** Waits of 100, 200, … ms for a previous run that is still closing (about 2 s in all). */
const PREVIOUS_RUN_WAITS = 6;

export class Dispatcher {
  private readonly owner = `dispatcher-${randomUUID()}`;
  /** Fault injection for tests: runs just before each Temporal start; a throw fails that start. */
  beforeStart?: (tenantId: string, executionId: string, dispatchId: string) => void | Promise<void>;
  private sweeper?: PeriodicTask;
  private readonly rows: DispatchStore;
  /** Each registered definition's compact plan, built once: the same for every run of it (the registry's settings are fixed). */
  private readonly plans = new WeakMap<VersionedPipeline, ReturnType<typeof compactPlan>>();
  readonly jobPriorityKey: number;
  /** where a bulk job's runs start (the sweeper's too: the row's spec names the job) */
  readonly jobTaskQueue: string;

  constructor(
    db: Db,
    private readonly client: Client,
    private readonly registry: PipelineRegistry,
    private readonly taskQueue: string,
    private readonly log: Log,
    /** deadline of the Temporal calls of one start (`pipeline.temporal.call-timeout`) */
    readonly callTimeoutMs = 5000,
    /** the runs a bulk job admits: their Temporal priority key (`pipeline.redrive-job.priority`) and task queue (`pipeline.redrive-job.run-task-queue`); others keep the default and `taskQueue` */
    jobRuns: { priorityKey?: number; taskQueue?: string } = {},
  ) {
    this.jobPriorityKey = jobRuns.priorityKey ?? 4;
    this.jobTaskQueue = jobRuns.taskQueue ?? taskQueue;
    this.rows = new DispatchStore(db);
  }

  /** The lease an admission gives its dispatch row, so this dispatcher can start it at once. */
  lease(): DispatchLease {
    return { owner: this.owner, ms: LEASE_MS };
  }

  /**
   * The sweeper's path: claims a free lease on the row, starts the run, marks the row
   * STARTED. Never throws: a failure leaves the row to the next sweep.
   */
  async dispatch(tenantId: string, executionId: string, dispatchId: string): Promise<DispatchOutcome> {
    const key = { tenantId, executionId, dispatchId };
    const claimed = await this.rows.claim({ ...key, lease: this.lease() });
    if (!claimed) return { dispatch: 'pending', runId: null };
    const outcome = await this.launch(claimed.record, dispatchId, claimed.spec, { swept: true });
    // The run's first step marks the row too; a swept start may find a run whose first step already passed.
    if (outcome.runId) await this.rows.markStarted({ ...key, runId: outcome.runId });
    return outcome;
  }

  /**
   * Starts the run of a dispatch row whose lease this dispatcher holds (an admission just
   * wrote it so). The run's first step marks the row STARTED. Never throws: on failure the
   * lease is given back and the sweeper retries.
   */
  async launch(record: ExecutionRecord, dispatchId: string, spec: DispatchSpec, options: { swept?: boolean } = {}): Promise<DispatchOutcome> {
    const { tenantId, executionId } = record;
    try {
      // The run follows the definition the execution is pinned to, never the newest one.
      const definition = this.registry.pinned(record.pipeline, record.pipelineVersion, record.definitionFingerprint);
      if (!definition)
        throw new Error(
          `pipeline "${record.pipeline}" version ${record.pipelineVersion} (${record.definitionFingerprint ?? 'any shape'}) is not registered here`,
        );
      const run: PipelineRunInput = {
        tenantId,
        executionId,
        pipeline: record.pipeline,
        pipelineVersion: definition.version,
        correlationId: record.correlationId,
        ...this.planOf(definition),
        resumeStepIndex: record.currentStepIndex,
        resumeAttempt: record.attempt,
        input: record.segmentInput,
        dispatchId,
        redrive: spec.redrive,
        stepActivityTypes: true,
      };
      await this.beforeStart?.(tenantId, executionId, dispatchId);
      // A start that cannot finish within the deadline stays pending: the sweeper starts it later.
      const runId = await withCallDeadline(this.client, this.callTimeoutMs, () =>
        withTraceCarrier(
          spec.trace,
          async () =>
            (options.swept ? await this.runOfDispatch(record.workflowId, dispatchId) : null) ?? this.startRun(record.workflowId, dispatchId, run, spec),
        ),
      );
      return { dispatch: 'started', runId };
    } catch (err) {
      const message = errorLine(err, 'start failed');
      this.log.warn({ event: 'execution_dispatch_failed', tenantId, executionId, dispatchId, error: message });
      await this.releaseLease(tenantId, executionId, dispatchId, message);
      return { dispatch: 'pending', runId: null, temporalUnavailable: temporalUnavailable(err) };
    }
  }

  /**
   * Starts the run, or finds the one this dispatch already started. Conflict policy FAIL:
   * a re-drive must never attach to the previous run while it is still closing. When the
   * workflowId is busy, the run's memo says whose it is: ours (a lost acknowledgement)
   * → its runId; another dispatch's → an error, and the sweeper tries again shortly.
   */
  private async startRun(workflowId: string, dispatchId: string, run: PipelineRunInput, spec: DispatchSpec, attempt = 0): Promise<string> {
    const { tenantId, executionId, pipeline, pipelineVersion } = run;
    try {
      const handle = await this.client.workflow.start(pipelineWorkflow, {
        workflowId,
        taskQueue: spec.redrive?.jobId ? this.jobTaskQueue : this.taskQueue,
        args: [run],
        memo: { dispatchId },
        // A bulk job's runs (and their activities, which inherit it) wait behind live work on a shared task queue.
        ...(spec.redrive?.jobId ? { priority: { priorityKey: this.jobPriorityKey } } : {}),
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
        typedSearchAttributes: new TypedSearchAttributes([
          { key: PipelineTenant, value: tenantId },
          { key: PipelineExecutionId, value: executionId },
          { key: PipelineName, value: run.pipeline },
          ...(spec.redrive?.redriveOf ? [{ key: PipelineRedriveOf, value: spec.redrive.redriveOf }] : []),
          ...(spec.redrive?.jobId ? [{ key: PipelineRedriveJob, value: spec.redrive.jobId }] : []),
          ...(spec.forkedFrom ? [{ key: PipelineForkedFrom, value: spec.forkedFrom.executionId }] : []),
        ]),
        staticSummary: `${pipeline} v${pipelineVersion} · tenant ${tenantId} · execution ${executionId}${spec.redrive ? ` · re-drive ${spec.redrive.intent}` : ''}${
          spec.forkedFrom ? ` · forked from ${spec.forkedFrom.executionId} at step ${spec.forkedFrom.stepIndex}` : ''
        }${spec.correctedInput ? (spec.redrive ? ' · re-driven with a corrected input' : ' · with a corrected input') : ''}`,
        staticDetails: [
          `**Pipeline** ${pipeline} version ${pipelineVersion}, ${run.steps.length} steps: ${run.steps
            .map((_, i) => planStep(run, i))
            .map((s, i) => `${i}:${s.name}(${s.transport}${s.command ? ',command' : ''})`)
            .join(' → ')}`,
          `**Resumes** at step ${run.resumeStepIndex}, attempt ${run.resumeAttempt}`,
          run.correlationId ? `**Correlation** ${run.correlationId}` : '',
          spec.redrive ? `**Re-drive** ${spec.redrive.redriveId} (${spec.redrive.intent})` : '',
          spec.correctedInput ? `**Corrected input** at ${spec.correctedInput.changedPaths.join(', ') || '(no path changed)'}` : '',
          spec.by ? `**Re-driven by** ${spec.by.principal}: ${spec.by.reason}` : '',
          spec.redrive?.redriveOf
            ? `**Re-drives run** [${spec.redrive.redriveOf}](${this.runLink(workflowId, spec.redrive.redriveOf)}) (search \`PipelineRedriveOf = "${spec.redrive.redriveOf}"\` from that run to here)`
            : '',
          spec.redrive?.jobId
            ? `**Bulk job** ${spec.redrive.jobId} (its runs: \`PipelineRedriveJob = "${spec.redrive.jobId}"\`; the job: workflow redrive-job/${tenantId}/${spec.redrive.jobId})`
            : '',
        ]
          .filter(Boolean)
          .join('\n\n'),
      });
      return handle.firstExecutionRunId;
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const handle = this.client.workflow.getHandle(workflowId);
      const description = await handle.describe();
      const owner = description.memo?.dispatchId;
      if (owner === dispatchId) return description.runId;
      // The previous run commits its terminal state one workflow task before it closes:
      // give it a moment rather than leaving an operator's re-drive to the next sweep.
      if (attempt < PREVIOUS_RUN_WAITS) {
        await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
        return this.startRun(workflowId, dispatchId, run, spec, attempt + 1);
      }
      // A run with no dispatchId in its memo was started by something other than a dispatcher (the CLI, another system).
      const holder = typeof owner !== 'string' ? ', a run this orchestrator did not start (no dispatchId in its memo)' : ` for dispatch ${owner}`;
      throw new Error(`workflow ${workflowId} is still running${holder}; the sweeper retries`);
    }
  }

  private planOf(definition: VersionedPipeline): ReturnType<typeof compactPlan> {
    let plan = this.plans.get(definition);
    if (!plan) this.plans.set(definition, (plan = compactPlan(this.registry.plan(definition))));
    return plan;
  }

  /**
   * A swept dispatch may already have its run: started by an admission whose first step has not
   * marked the row yet (a backlog, a queue no worker serves yet), and perhaps closed since (an
   * operator terminated it). That run is the dispatch's, open or closed: starting another would
   * undo the operator's terminate (the run-end watch ends the record instead). Null: no run of
   * this dispatch exists, so it is started.
   */
  private async runOfDispatch(workflowId: string, dispatchId: string): Promise<string | null> {
    try {
      const description = await this.client.workflow.getHandle(workflowId).describe();
      return description.memo?.dispatchId === dispatchId ? description.runId : null;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return null;
      throw err;
    }
  }

  /** The Temporal UI's page of a run, relative to the UI's root (the details render it as a link). */
  private runLink(workflowId: string, runId: string): string {
    return `/namespaces/${encodeURIComponent(this.client.options.namespace)}/workflows/${encodeURIComponent(workflowId)}/${encodeURIComponent(runId)}/history`;
  }

  private async releaseLease(tenantId: string, executionId: string, dispatchId: string, error: string): Promise<void> {
    // Give the lease back so the sweeper retries soon, not after the lease window.
    await this.rows.release({ tenantId, executionId, dispatchId, error, retryInMs: 1000 }).catch(() => undefined);
  }

  /** One sweep: dispatches every PENDING row whose lease is free. Returns how many started. */
  async sweepOnce(limit = 100): Promise<number> {
    let started = 0;
    for (const key of await this.rows.due({ limit })) {
      const outcome = await this.dispatch(key.tenantId, key.executionId, key.dispatchId);
      if (outcome.dispatch === 'started') {
        started++;
        this.log.info({ event: 'execution_dispatch_swept', ...key, runId: outcome.runId });
      }
      // Temporal is down: the other rows would each wait out the deadline too. The next sweep tries again.
      if (outcome.temporalUnavailable) break;
    }
    return started;
  }

  startSweeper(intervalMs: number): void {
    this.sweeper ??= new PeriodicTask('execution_sweep_failed', intervalMs, () => this.sweepOnce(), this.log);
    this.sweeper.start();
  }

  async stopSweeper(): Promise<void> {
    await this.sweeper?.stop();
  }
}

/** A start that failed because Temporal did not answer (deadline, unreachable), not because of its row. */
function temporalUnavailable(err: unknown): boolean {
  if (err instanceof TemporalCallTimeoutError) return true;
  const code = (err as { code?: unknown; cause?: { code?: unknown } })?.cause?.code ?? (err as { code?: unknown })?.code;
  return code === grpcStatus.UNAVAILABLE || code === grpcStatus.DEADLINE_EXCEEDED || code === grpcStatus.CANCELLED;
}
