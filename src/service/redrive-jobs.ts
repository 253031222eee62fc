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
import { z } from 'zod';
import { ConflictError, JobNotFoundError, PipelineError, RedriveRefusedError } from '../errors';
import type { Log } from '../log';
import { storableText } from '../storable';
import type { EnvelopeFilter } from '../store/failure-group-store';
import { RedriveJobStore, type JobCounts, type RedriveJob, type RedriveJobStatus, type SelectedItem, type Selection } from '../store/redrive-job-store';
import type { Db } from '../store/db';
import { withCallDeadline } from '../temporal/call-deadline';
import type { JobTickState } from '../activities/redrive-job-activities';
import { DEFAULT_HALT_ON, dueItems, type HaltOn, type Pace } from '../workflows/redrive-job-policy';
import { redriveJobWake, redriveJobWorkflow } from '../workflows/redrive-job-workflow';
import { PipelineRedriveJob, PipelineTenant } from '../workflows/search-attributes';
import { TerminalReasonSchema } from '../api/schemas';
import { ERROR_CODE_PATTERN } from '../api/queries';
import { ID_PATTERN } from '../ids';
import type { RedriveRequest, RedriveService } from './redrive';

export const MAX_JOB_ITEMS = 10_000;
/** Items judged at once by a dry run. */
const DRY_RUN_LANES = 8;
/** Items admitted at once by a tick (each waits mostly on Postgres and Temporal). */
const ADMIT_LANES = 32;
/** A tick that is behind its pace keeps admitting what falls due for up to this long, instead of handing back to the workflow for each batch. */
const TICK_BUDGET_MS = 5000;
const SAMPLE_SIZE = 20;

const IsoTime = z.iso.datetime({ offset: true }).meta({ description: 'ISO 8601 timestamp' });
const Filter = z
  .object({
    groupId: z
      .string()
      .regex(/^[0-9a-f]{16}$/, 'a groupId from GET …/dlq/groups')
      .optional(),
    terminalReason: TerminalReasonSchema.optional(),
    errorCode: z.string().regex(ERROR_CODE_PATTERN).optional(),
    step: storableText(z.string().min(1).max(128)).optional(),
    from: IsoTime.optional(),
    to: IsoTime.optional(),
  })
  .strict()
  .refine((f) => Object.values(f).some((value) => value !== undefined), {
    message: 'give at least one of groupId, terminalReason, errorCode, step, from, to (or executionIds)',
  });
const Ids = z
  .object({
    executionIds: z.array(z.string().regex(ID_PATTERN, 'an execution id')).min(1).max(MAX_JOB_ITEMS),
  })
  .strict();

export const RedriveJobRequest = z
  .object({
    /** unredriven DLQ envelopes by filter, or listed executions */
    selection: z.union([Ids, Filter]),
    reason: storableText(z.string().trim().min(1).max(1000)),
    allowFailed: z.boolean(),
    intent: z.literal('RETRY_FAILED_COMMAND').optional(),
    batchSize: z.number().int().min(1).max(1000).default(50),
    ratePerSecond: z.number().min(0.1).max(300).default(10),
    canary: z.number().int().min(1).max(1000).optional(),
    haltOn: z
      .object({
        failedAgainShare: z.number().gt(0).max(1).default(DEFAULT_HALT_ON.failedAgainShare),
        minFinished: z.number().int().min(1).max(MAX_JOB_ITEMS).default(DEFAULT_HALT_ON.minFinished),
        remoteOutcomeUnknown: z.boolean().default(DEFAULT_HALT_ON.remoteOutcomeUnknown),
      })
      .strict()
      .default(DEFAULT_HALT_ON),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.intent && body.allowFailed !== true)
      ctx.addIssue({ code: 'custom', path: ['intent'], message: 'intent RETRY_FAILED_COMMAND requires allowFailed=true' });
  });
export type RedriveJobRequest = z.infer<typeof RedriveJobRequest>;
/** Fields whose JSON literal must be an integer (`50`, never `50.0`). */
export const JOB_INTEGER_FIELDS = ['batchSize', 'canary'];

export function jobWorkflowId(tenantId: string, jobId: string): string {
  return `redrive-job/${tenantId}/${jobId}`;
}

/** The answer of `?dryRun=true`: what the job would do now; nothing is changed. */
export interface DryRunView {
  dryRun: true;
  matched: number;
  wouldAdmit: number;
  refused: Record<string, number>;
  excluded: Record<string, number>;
  sample: Record<string, unknown>[];
  batchSize: number;
  ratePerSecond: number;
  estimatedSeconds: number;
}

export class RedriveJobs {
  readonly store: RedriveJobStore;

  constructor(
    db: Db,
    private readonly redrive: RedriveService,
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly log: Log,
    /** deadline of each Temporal call made while answering a request */
    private readonly callTimeoutMs = 5000,
  ) {
    this.store = new RedriveJobStore(db);
  }

  private async select(tenantId: string, selection: RedriveJobRequest['selection']): Promise<Selection> {
    const found =
      'executionIds' in selection
        ? await this.store.selectByIds(tenantId, selection.executionIds)
        : await this.store.selectByFilter(tenantId, selection as EnvelopeFilter, MAX_JOB_ITEMS + 1);
    if (found.items.length > MAX_JOB_ITEMS) {
      throw new RedriveRefusedError(
        'SELECTION_TOO_LARGE',
        `the selection matches more than ${MAX_JOB_ITEMS} executions; narrow it (by groupId, errorCode, step or a time range)`,
      );
    }
    if (found.items.length === 0) {
      const excluded = Object.entries(found.excluded)
        .map(([code, n]) => `${n} ${code}`)
        .join(', ');
      throw new RedriveRefusedError('SELECTION_EMPTY', `the selection matches no execution to re-drive${excluded ? ` (left out: ${excluded})` : ''}`, {
        excluded: found.excluded,
      });
    }
    return found;
  }

  private itemRequest(body: Pick<RedriveJobRequest, 'reason' | 'allowFailed' | 'intent'>, item: SelectedItem): RedriveRequest {
    return { expectedVersion: item.expectedVersion, reason: body.reason, allowFailed: body.allowFailed, ...(body.intent ? { intent: body.intent } : {}) };
  }

  /** Every item through the single re-drive's dry run, with the version just read. */
  async dryRun(tenantId: string, body: RedriveJobRequest): Promise<DryRunView> {
    const selection = await this.select(tenantId, body.selection);
    const refused: Record<string, number> = {};
    const sample: Record<string, unknown>[] = [];
    let wouldAdmit = 0;
    await eachLimited(selection.items, DRY_RUN_LANES, async (item, index) => {
      const verdict = await this.redrive.preview(tenantId, item.executionId, this.itemRequest(body, item));
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
  async create(tenantId: string, body: RedriveJobRequest, principal: string): Promise<RedriveJob & { dispatch: 'started' | 'pending' }> {
    const selection = await this.select(tenantId, body.selection);
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
    const started = await this.start(tenantId, job.jobId, selection.items.length);
    return { ...job, started, dispatch: started ? 'started' : 'pending' };
  }

  /** Starts the job's workflow (an already started one counts as started); false when Temporal did not answer. */
  private async start(tenantId: string, jobId: string, selected: number): Promise<boolean> {
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
          staticSummary: `bulk re-drive job ${jobId} · tenant ${tenantId} · ${selected} items`,
          staticDetails: `**Its re-driven runs** \`PipelineRedriveJob = "${jobId}"\`\n\n**Progress** GET /admin/tenants/${tenantId}/redrive-jobs/${jobId}`,
        }),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) {
        this.log.warn({
          event: 'redrive_job_start_failed',
          tenantId,
          jobId,
          error: err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 300) : 'start failed',
        });
        return false;
      }
    }
    await this.store.markStarted(tenantId, jobId);
    return true;
  }

  async get(tenantId: string, jobId: string): Promise<ReturnType<typeof jobView>> {
    const job = await this.store.get(tenantId, jobId);
    if (!job) throw new JobNotFoundError(jobId);
    return jobView(job, await this.store.counts(tenantId, jobId));
  }

  async list(tenantId: string, options: { limit: number; after?: { createdAt: string; jobId: string } }) {
    const page = await this.store.list(tenantId, options);
    const items = [];
    for (const job of page.jobs) items.push(jobView(job, await this.store.counts(tenantId, job.jobId)));
    return { items, more: page.more };
  }

  /**
   * pause / resume / abort: a conditional status change in the store (the job's truth),
   * then a wake-up signal to its workflow. A repeated pause or resume answers the job as it
   * is; a finished job answers 409 JOB_FINISHED.
   */
  async control(
    tenantId: string,
    jobId: string,
    action: 'pause' | 'resume' | 'abort',
    principal: string,
    reason?: string,
  ): Promise<ReturnType<typeof jobView>> {
    const job = await this.store.get(tenantId, jobId);
    if (!job) throw new JobNotFoundError(jobId);
    const rule: Record<typeof action, { from: RedriveJobStatus[]; to: RedriveJobStatus }> = {
      pause: { from: ['RUNNING'], to: 'PAUSED' },
      resume: { from: ['PAUSED'], to: 'RUNNING' },
      abort: { from: ['RUNNING', 'PAUSED'], to: 'ABORTED' },
    };
    const { from, to } = rule[action];
    if (job.status === 'ABORTED' || job.status === 'COMPLETED') {
      throw new ConflictError(`job ${jobId} is ${job.status}; it can no longer ${action}`, 'JOB_FINISHED', { status: job.status });
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

  // ---- the workflow's side (activities) ----

  /**
   * Admits up to `max` due items in selection order, never more than `batchSize` runs in
   * flight, and only while the job is RUNNING (read again after every few dozen items, so
   * a pause stops a tick within one batch). Given the job's `pace`, a tick that is behind
   * keeps admitting what falls due (at most `pace.cap` items, for about 5 s) rather than
   * returning for every batch. A refusal skips the item with its code; a 5xx (Temporal or
   * Postgres not answering) leaves it SELECTED for a later tick.
   */
  async admitDue(tenantId: string, jobId: string, max: number, heartbeat: () => void = () => undefined, pace?: Pace & { cap: number }): Promise<JobTickState> {
    let job = await this.store.get(tenantId, jobId);
    if (!job) return goneState();
    let counts = await this.store.counts(tenantId, jobId);
    const startedAt = Date.now();
    const processedAtStart = counts.admitted + counts.skipped;
    let unavailable = false;
    let budget = max;
    const body = job.request as RedriveJobRequest;
    while (budget > 0 && job.status === 'RUNNING' && !unavailable) {
      const room = Math.min(budget, job.batchSize - counts.running, counts.remaining, ADMIT_LANES);
      if (room <= 0) break;
      const items = await this.store.nextItems(tenantId, jobId, room);
      if (items.length === 0) break;
      await eachLimited(items, ADMIT_LANES, async (item) => {
        try {
          await this.redrive.redrive(tenantId, item.executionId, this.itemRequest(body, item), job!.principal, { jobId });
        } catch (err) {
          if (!(err instanceof PipelineError) || err.status >= 500) {
            unavailable = true;
            this.log.warn({
              event: 'redrive_job_item_deferred',
              tenantId,
              jobId,
              executionId: item.executionId,
              error: err instanceof PipelineError ? err.code : err instanceof Error ? err.name : 'unknown',
            });
            return;
          }
          if (await this.store.skip(tenantId, jobId, item.executionId, err.code)) {
            this.log.info({ event: 'redrive_job_item_skipped', tenantId, jobId, executionId: item.executionId, code: err.code });
          }
        }
        heartbeat();
      });
      job = (await this.store.get(tenantId, jobId)) ?? job;
      counts = await this.store.counts(tenantId, jobId);
      const processed = counts.admitted + counts.skipped;
      budget =
        pace && Date.now() - startedAt < TICK_BUDGET_MS
          ? Math.min(dueItems(pace, job.ratePerSecond, processed, Date.now()), pace.cap - (processed - processedAtStart))
          : budget - items.length;
    }
    return tickState(job, counts, unavailable);
  }

  async halt(tenantId: string, jobId: string, reason: string): Promise<JobTickState> {
    const entry = { action: 'halt' as const, principal: 'system', at: new Date().toISOString(), reason };
    const moved = await this.store.transition({ tenantId, jobId, from: ['RUNNING'], to: 'PAUSED', entry, haltReason: reason });
    if (moved) this.log.warn({ event: 'redrive_job_halted', tenantId, jobId, reason });
    return this.admitDue(tenantId, jobId, 0);
  }

  async finish(tenantId: string, jobId: string): Promise<JobTickState> {
    const moved = await this.store.transition({ tenantId, jobId, from: ['RUNNING'], to: 'COMPLETED', entry: null, haltReason: null });
    if (moved) {
      const counts = await this.store.counts(tenantId, jobId);
      this.log.info({
        event: 'redrive_job_completed',
        tenantId,
        jobId,
        admitted: counts.admitted,
        skipped: counts.skipped,
        skippedByCode: counts.skippedByCode,
      });
    }
    return this.admitDue(tenantId, jobId, 0);
  }

  // ---- the sweeper ----

  /** Starts the workflow of every job whose start was lost: created over `olderThanMs` ago (its request's own start has that long) and never started. */
  async sweepOnce(olderThanMs = 30_000): Promise<number> {
    let started = 0;
    for (const { tenantId, jobId } of await this.store.unstarted({ limit: 20, olderThanMs })) {
      const job = await this.store.get(tenantId, jobId);
      if (!job) continue;
      if (!(await this.start(tenantId, jobId, job.selected))) break; // Temporal is down: the next sweep tries again
      started++;
      this.log.info({ event: 'redrive_job_swept', tenantId, jobId });
    }
    return started;
  }
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

function goneState(): JobTickState {
  return {
    status: 'GONE',
    batchSize: 1,
    ratePerSecond: 1,
    canary: null,
    haltOn: DEFAULT_HALT_ON,
    processed: 0,
    remaining: 0,
    admitted: 0,
    running: 0,
    succeeded: 0,
    failedAgain: 0,
    remoteOutcomeUnknown: 0,
    unavailable: false,
  };
}

function tickState(job: RedriveJob, counts: JobCounts, unavailable: boolean): JobTickState {
  return {
    status: job.status,
    batchSize: job.batchSize,
    ratePerSecond: job.ratePerSecond,
    canary: job.canary,
    haltOn: job.haltOn as HaltOn,
    processed: counts.admitted + counts.skipped,
    remaining: counts.remaining,
    admitted: counts.admitted,
    running: counts.running,
    succeeded: counts.succeeded,
    failedAgain: counts.failedAgain,
    remoteOutcomeUnknown: counts.remoteOutcomeUnknown,
    unavailable,
  };
}

/** The API's view of a job: the row, where its items stand, the achieved rate and an ETA. */
export function jobView(job: RedriveJob & { dispatch?: 'started' | 'pending' }, counts: JobCounts) {
  const processed = counts.admitted + counts.skipped;
  const spanSeconds = counts.firstProcessedAt && counts.lastProcessedAt ? (Date.parse(counts.lastProcessedAt) - Date.parse(counts.firstProcessedAt)) / 1000 : 0;
  const achieved = processed >= 2 && spanSeconds > 0 ? round((processed - 1) / spanSeconds) : null;
  const pace = Math.min(job.ratePerSecond, achieved ?? job.ratePerSecond);
  const request = job.request as RedriveJobRequest;
  return {
    jobId: job.jobId,
    tenantId: job.tenantId,
    status: job.status,
    haltReason: job.haltReason,
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
    rate: { asked: job.ratePerSecond, achieved },
    etaSeconds: job.status === 'RUNNING' ? round(counts.remaining / pace) : job.status === 'PAUSED' ? null : 0,
    controlLog: job.controlLog,
  };
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function eachLimited<T>(items: T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      await fn(items[index], index);
    }
  });
  await Promise.all(lanes);
}
