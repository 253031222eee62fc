/**
 * Bulk re-drive (the spec's "re-drive in bounded batches"): a selection of unredriven DLQ envelopes (or
 * listed executions) becomes a job whose items are re-driven, at a rate and with at most
 * `batchSize` in flight, by a Temporal workflow. Each item goes through RedriveService's
 * own admission with the version read at selection: an item that moved since is skipped
 * with the single re-drive's refusal code, never re-read and forced. The job row and its
 * items are written in one transaction before the workflow is started, and a sweeper
 * starts any job whose start was lost, so a crash mid-request loses nothing.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { errorLine, JobFinishedError, JobNotFoundError, SelectionError, ValidationError } from '../errors';
import type { Log } from '../log';
import type { JobCounts, RedriveJob, RedriveJobStatus, RedriveJobStore, Selection } from '../store/redrive-job-store';
import { withCallDeadline } from '../temporal/call-deadline';
import type { TaskQueuePollers } from '../temporal/task-queue-pollers';
import { redriveJobWake, redriveJobWorkflow } from '../workflows/redrive-job-workflow';
import { PipelineRedriveJob, PipelineTenant } from '../workflows/search-attributes';
import { SERVICE_CLI, yieldingText } from '../workflows/redrive-job-details';
import { eachLimited, itemRequest, jobWorkflowId, parseJob, round } from './redrive-job-request';
import { achievedRate } from './job-rate';
import { MAX_JOB_ITEMS, type RedriveJobRequest } from '../contract/requests';
import type { RedriveService } from './redrive';
import type { DispatchOutcome } from '../spec-words';
import type { z } from 'zod';
import type { RedriveJobDryRunSchema, RedriveJobViewSchema } from '../contract/responses';

export { jobWorkflowId } from './redrive-job-request';

/** Items judged at once by a dry run. */
const DRY_RUN_LANES = 8;
const SAMPLE_SIZE = 20;

/** The answer of `?dryRun=true`: what the job would do now; nothing is changed. */
export type DryRunView = z.output<typeof RedriveJobDryRunSchema>;

export class RedriveJobs {
  constructor(
    readonly store: RedriveJobStore,
    private readonly redrive: RedriveService,
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly log: Log,
    /** deadline of each Temporal call made while answering a request */
    private readonly callTimeoutMs = 5000,
    /**
     * Asks Temporal whether workers poll the jobs' queue and `runTaskQueue`, the queue a job's
     * re-driven runs start on, so a job's view can say when none does. Without it (a composition
     * with no Temporal to ask) a job's read never calls Temporal.
     */
    private readonly queues?: { pollers: TaskQueuePollers; runTaskQueue: string },
  ) {}

  /** The queues a RUNNING job depends on that no worker polls: its own, and its runs' while it has runs in flight (unknown counts as polled). */
  private async unpolled(job: RedriveJob, counts: JobCounts): Promise<Unpolled> {
    if (job.status !== 'RUNNING' || !this.queues) return {};
    const { pollers, runTaskQueue } = this.queues;
    const runs = counts.running > 0 ? runTaskQueue : undefined;
    const [jobPolled, runsPolled] = await Promise.all([pollers.polled(this.taskQueue), runs ? pollers.polled(runs) : null]);
    return { ...(jobPolled === false ? { jobQueue: this.taskQueue } : {}), ...(runs && runsPolled === false ? { runQueue: runs } : {}) };
  }

  /** The selection's items now; a canary that is not smaller than it is refused (it would make the whole job its canary). */
  private async select(tenantId: string, body: RedriveJobRequest): Promise<Selection> {
    const { selection } = body;
    const found =
      'executionIds' in selection
        ? await this.store.selectByIds(tenantId, selection.executionIds)
        : await this.store.selectByFilter(tenantId, selection, MAX_JOB_ITEMS + 1);
    if (found.items.length > MAX_JOB_ITEMS) {
      throw new SelectionError(
        'SELECTION_TOO_LARGE',
        `the selection matches more than ${MAX_JOB_ITEMS} executions; narrow it (by groupId, errorCode, step or a time range)`,
      );
    }
    if (found.items.length === 0) {
      const excluded = Object.entries(found.excluded)
        .map(([code, n]) => `${n} ${code}`)
        .join(', ');
      throw new SelectionError('SELECTION_EMPTY', `the selection matches no execution to re-drive${excluded ? ` (left out: ${excluded})` : ''}`, {
        excluded: found.excluded,
      });
    }
    if (body.canary !== undefined && body.canary >= found.items.length) {
      throw new ValidationError(
        `canary (${body.canary}) must be smaller than the selection (${found.items.length} executions): a canary is a first few items`,
        [{ path: 'canary', code: 'too_big', message: `must be at most ${found.items.length - 1}` }],
      );
    }
    return found;
  }

  /**
   * Every item through the single re-drive's dry run, with the version just read. Set-based
   * where the checks are store reads: the records and Command effects of the whole selection
   * are read in two statements and judged in memory; only checks that must ask someone else
   * (an active run asks Temporal, a REMOTE_OUTCOME_UNKNOWN attestation asks the worker) do
   * I/O per item, on DRY_RUN_LANES lanes.
   */
  async dryRun(tenantId: string, body: RedriveJobRequest): Promise<DryRunView> {
    const selection = await this.select(tenantId, body);
    const refused: Record<string, number> = {};
    const sample: DryRunView['sample'] = [];
    let wouldAdmit = 0;
    const loaded = await this.redrive.load(
      tenantId,
      selection.items.map((item) => item.executionId),
    );
    await eachLimited(selection.items, DRY_RUN_LANES, async (item, index) => {
      const verdict = await this.redrive.preview(tenantId, item.executionId, itemRequest(body, item), loaded);
      if (verdict.admitted) wouldAdmit++;
      else refused[verdict.code] = (refused[verdict.code] ?? 0) + 1;
      if (index < SAMPLE_SIZE) {
        sample[index] = verdict.admitted
          ? {
              executionId: item.executionId,
              expectedVersion: item.expectedVersion,
              admitted: true,
              mode: verdict.mode,
              resumeStepIndex: verdict.resumeStepIndex,
              attempt: verdict.attempt,
            }
          : { executionId: item.executionId, expectedVersion: item.expectedVersion, admitted: false, code: verdict.code, detail: verdict.detail };
      }
    });
    return {
      dryRun: true,
      matched: selection.items.length,
      wouldAdmit,
      refused,
      excluded: selection.excluded,
      sample,
      batchSize: body.batchSize,
      ratePerSecond: body.ratePerSecond,
      estimatedSeconds: round(Math.max(0, selection.items.length - 1) / body.ratePerSecond),
    };
  }

  /** Writes the job and its items, then starts its workflow (a failed start is left to the sweeper). */
  async create(tenantId: string, body: RedriveJobRequest, principal: string): Promise<RedriveJob & { dispatch: DispatchOutcome }> {
    const selection = await this.select(tenantId, body);
    const job = await this.store.create({
      tenantId,
      jobId: randomUUID(),
      principal,
      reason: body.reason,
      request: body,
      batchSize: body.batchSize,
      ratePerSecond: body.ratePerSecond,
      canary: body.canary ?? null,
      haltOn: body.haltOn,
      selection,
    });
    this.log.info({
      event: 'redrive_job_created',
      tenantId,
      jobId: job.jobId,
      principal,
      selected: selection.items.length,
      excluded: selection.excluded,
      batchSize: job.batchSize,
      ratePerSecond: job.ratePerSecond,
      canary: job.canary,
    });
    const started = await this.start(job);
    return { ...job, started, dispatch: started ? 'started' : 'pending' };
  }

  /** Starts the job's workflow (an already started one counts as started); false when Temporal did not answer. */
  private async start(job: RedriveJob): Promise<boolean> {
    const { tenantId, jobId, selected } = job;
    try {
      await withCallDeadline(this.client, this.callTimeoutMs, () =>
        this.client.workflow.start(redriveJobWorkflow, {
          workflowId: jobWorkflowId(tenantId, jobId),
          taskQueue: this.taskQueue,
          args: [{ tenantId, jobId }],
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          typedSearchAttributes: new TypedSearchAttributes([
            { key: PipelineTenant, value: tenantId },
            { key: PipelineRedriveJob, value: jobId },
          ]),
          staticSummary: `bulk re-drive job ${jobId} · tenant ${tenantId} · ${selected} items · by ${job.principal}`,
          staticDetails: jobStaticDetails(job),
        }),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
        this.log.warn({
          event: 'redrive_job_start_failed',
          tenantId,
          jobId,
          error: errorLine(err, 'start failed'),
        });
        return false;
      }
    }
    await this.store.markStarted(tenantId, jobId);
    return true;
  }

  async get(tenantId: string, jobId: string): Promise<JobView> {
    const job = await this.store.get(tenantId, jobId);
    if (!job) throw new JobNotFoundError(jobId);
    const counts = await this.store.counts(tenantId, jobId);
    return jobView(job, counts, await this.unpolled(job, counts));
  }

  async list(tenantId: string, options: { limit: number; after?: { createdAt: string; jobId: string } }) {
    const page = await this.store.list(tenantId, options);
    const counts = await this.store.countsOf(
      tenantId,
      page.jobs.map((job) => job.jobId),
    );
    return { items: page.jobs.map((job) => jobView(job, counts.get(job.jobId)!)), more: page.more };
  }

  /**
   * pause / resume / abort: a conditional status change in the store (the job's truth),
   * then a wake-up signal to its workflow. A repeated pause or resume answers the job as it
   * is; a finished job answers 409 JOB_FINISHED.
   */
  async control(tenantId: string, jobId: string, action: 'pause' | 'resume' | 'abort', principal: string, reason?: string): Promise<JobView> {
    const job = await this.store.get(tenantId, jobId);
    if (!job) throw new JobNotFoundError(jobId);
    const rule: Record<typeof action, { from: RedriveJobStatus[]; to: RedriveJobStatus }> = {
      pause: { from: ['RUNNING'], to: 'PAUSED' },
      resume: { from: ['PAUSED'], to: 'RUNNING' },
      abort: { from: ['RUNNING', 'PAUSED'], to: 'ABORTED' },
    };
    const { from, to } = rule[action];
    if (job.status === 'ABORTED' || job.status === 'COMPLETED' || job.status === 'FAILED') {
      throw new JobFinishedError(jobId, job.status, action);
    }
    if (job.status === to) return this.get(tenantId, jobId);
    const entry = { action, principal, at: new Date().toISOString(), ...(reason ? { reason } : {}) };
    const moved = await this.store.transition({ tenantId, jobId, from, to, entry, haltReason: to === 'PAUSED' ? job.haltReason : null });
    if (!moved) return this.control(tenantId, jobId, action, principal, reason); // it changed in between: judge again
    this.log.info({ event: 'redrive_job_control', tenantId, jobId, action, principal, status: to });
    await this.wake(tenantId, jobId);
    return this.get(tenantId, jobId);
  }

  /** Best effort: the workflow reads the store on its next poll anyway. */
  private async wake(tenantId: string, jobId: string): Promise<void> {
    try {
      await withCallDeadline(this.client, this.callTimeoutMs, () => this.client.workflow.getHandle(jobWorkflowId(tenantId, jobId)).signal(redriveJobWake));
    } catch (err) {
      this.log.warn({ event: 'redrive_job_wake_failed', tenantId, jobId, error: err instanceof Error ? err.name : 'unknown' });
    }
  }

  // ---- the sweeper ----

  /** Starts the workflow of every job whose start was lost: created over `olderThanMs` ago (its request's own start has that long) and never started. */
  async sweepOnce(olderThanMs = 30_000): Promise<number> {
    let started = 0;
    for (const { tenantId, jobId } of await this.store.unstarted({ limit: 20, olderThanMs })) {
      const job = await this.store.get(tenantId, jobId);
      if (!job) continue;
      if (!(await this.start(job))) break; // Temporal is down: the next sweep tries again
      started++;
      this.log.info({ event: 'redrive_job_swept', tenantId, jobId });
    }
    return started;
  }
}

/** The job's fixed facts for the Temporal UI (its current details, set by the workflow, say where it stands). */
function jobStaticDetails(job: RedriveJob): string {
  const { tenantId, jobId } = job;
  return [
    `**Started by** ${job.principal}: ${job.reason}`,
    `**Selection** ${describeSelection(parseJob(job).request.selection)}: ${job.selected} items`,
    `**Its re-driven runs** \`PipelineRedriveJob = "${jobId}"\``,
    `**Inspect** \`${SERVICE_CLI} jobs show ${jobId} --tenant ${tenantId}\` (GET /admin/tenants/${tenantId}/redrive-jobs/${jobId})`,
  ].join('\n\n');
}

function describeSelection(selection: RedriveJobRequest['selection']): string {
  if ('executionIds' in selection) return `${selection.executionIds.length} listed executions`;
  return Object.entries(selection)
    .map(([key, value]) => `${key} ${String(value)}`)
    .join(', ');
}

/** What the API answers for a job: the contract's schema (src/contract/responses.ts) is its one definition. */
export type JobView = z.output<typeof RedriveJobViewSchema>;

/** Task queues no worker polls (Temporal's answer; a single job's view asks, a list does not). */
export interface Unpolled {
  /** the jobs' own queue: the job's workflow does not tick */
  jobQueue?: string;
  /** where its re-driven runs wait */
  runQueue?: string;
}

/** The API's view of a job: the row, where its items stand, the achieved rate and an ETA (typed by its schema, so the two cannot drift). */

export function jobView(stored: RedriveJob & { dispatch?: DispatchOutcome }, counts: JobCounts, unpolled: Unpolled = {}): JobView {
  const job = { ...parseJob(stored), dispatch: stored.dispatch };
  const processed = counts.admitted + counts.skipped;
  // Over the time it ran: a pause between its first and latest item is not part of its pace (job-rate.ts).
  const rate = achievedRate(processed, counts.firstProcessedAt, counts.lastProcessedAt, job.controlLog);
  const achieved = rate === null ? null : round(rate);
  // A yielding job's rate now (below the asked one); the ETA runs at the lower of it and the achieved rate.
  const current = job.status === 'RUNNING' && job.yielding ? job.yielding.rate : job.ratePerSecond;
  const pace = Math.min(current, achieved ?? current);
  const request = job.request;
  return {
    jobId: job.jobId,
    tenantId: job.tenantId,
    status: job.status,
    haltReason: job.haltReason,
    failureReason: job.failureReason,
    principal: job.principal,
    reason: job.reason,
    selection: request.selection,
    allowFailed: request.allowFailed,
    intent: request.intent ?? null,
    batchSize: job.batchSize,
    ratePerSecond: job.ratePerSecond,
    canary: job.canary,
    haltOn: job.haltOn,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    finishedAt: job.finishedAt,
    workflowId: jobWorkflowId(job.tenantId, job.jobId),
    dispatch: job.dispatch ?? (job.started ? 'started' : 'pending'),
    excluded: job.excluded,
    counts: {
      selected: counts.selected,
      processed,
      remaining: counts.remaining,
      admitted: counts.admitted,
      skipped: counts.skipped,
      skippedByCode: counts.skippedByCode,
      succeeded: counts.succeeded,
      failedAgain: counts.failedAgain,
      remoteOutcomeUnknown: counts.remoteOutcomeUnknown,
      running: counts.running,
    },
    rate: { asked: job.ratePerSecond, achieved, current },
    // No ETA while no worker serves a queue it needs: nothing moves until one does.
    etaSeconds: unpolled.jobQueue || unpolled.runQueue ? null : job.status === 'RUNNING' ? round(counts.remaining / pace) : job.status === 'PAUSED' ? null : 0,
    heldBack: unpolled.jobQueue
      ? `no worker polls task queue ${unpolled.jobQueue}, where the job's workflow runs: it admits nothing until a worker process (pipeline.role worker or all) runs with pipeline.redrive-job.task-queue ${unpolled.jobQueue}`
      : unpolled.runQueue
        ? `no worker polls task queue ${unpolled.runQueue}, where its ${counts.running} re-driven runs wait: start one with pipeline.orchestrator.worker.runs=bulk or all`
        : job.status === 'RUNNING' && counts.remaining > 0 && counts.running >= job.batchSize
          ? `waiting for room: ${counts.running} re-driven runs still running (batchSize ${job.batchSize})`
          : job.status === 'RUNNING' && counts.remaining > 0 && job.yielding
            ? `yielding to live traffic: ${yieldingText(job.ratePerSecond, job.yielding)}`
            : null,
    controlLog: job.controlLog,
  };
}
