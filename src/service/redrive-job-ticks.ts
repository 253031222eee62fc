/**
 * The workflow's side of a bulk re-drive job, used by its activities
 * (activities/redrive-job-activities.ts): admit the due items, halt, finish, fail. It never
 * imports the workflow (the API side, service/redrive-jobs.ts, starts it), so the workflow,
 * its activities and this module form no import circle.
 *
 * Each item goes through RedriveService's own admission with the version read at
 * selection. A refusal (4xx) skips the item with the refusal's code. Temporal or Postgres
 * not answering (503 TEMPORAL_UNAVAILABLE / STORE_UNAVAILABLE) leaves it SELECTED and the job
 * waits: nothing can be admitted then. Any other failure (a 500, a 503 of one item's own
 * dependency, an unexpected error) counts an admission attempt on the item; at
 * MAX_ADMISSION_ATTEMPTS the item is skipped as ADMISSION_FAILED, so no item holds a job
 * RUNNING for ever.
 */
import { PipelineError } from '../errors';
import type { Log } from '../log';
import type { Metrics } from '../metrics';
import { setTimeout as sleep } from 'node:timers/promises';
import { AdmissionTooSoonError, jobGate, JobNotAdmittingError } from '../store/job-gate';
import type { JobCounts, RedriveJobStore } from '../store/redrive-job-store';
import type { RedriveJobStatus, SelectedItem } from '../store/redrive-job-store';
import { dueItems, YIELD, type HaltOn, type Pace, type Yield } from '../workflows/redrive-job-policy';
import { DEFAULT_HALT_ON } from '../contract/requests';
import { itemRequest, parseJob, type ParsedJob } from './redrive-job-request';
import type { AdmissionScope, RedriveService } from './redrive';

/**
 * A tick that is behind its pace keeps admitting what falls due for up to this long, instead of
 * handing back to the workflow for each batch. Each handback (a workflow task, then the next
 * activity) takes 0.1–0.2 s on a busy machine, about 3 % of a 5 s tick: 10 s halves it. A pause
 * still stops a tick at its next admission (the job's gate, store/job-gate.ts); a cancellation in Temporal
 * waits for the tick in flight, so for up to this long. The workflow's cap of 1,000 items per
 * tick ends a 100/s tick here too.
 */
const TICK_BUDGET_MS = 10_000;
/**
 * Items a tick holds ready, per lane. The lanes take them one at a time in selection order; once
 * fewer than one per lane are left, the next are read in the background (the job, its counts,
 * then the items it has room for), so no lane waits for another's admission. With a read after
 * each batch instead, the pause for the batch's slowest admission cost a 100/s job about 6 % of
 * its rate (the jobrate benchmark with its runs held: 94/s).
 */
const ITEMS_PER_LANE = 4;
/**
 * A tick that paces reads the items falling due within this long, not only those due now: they
 * wait for their slot in a lane (the slots hold the rate). Read only as they fall due, a job near
 * its pace read one or two items at a time, three statements per admission at 100/s.
 */
const LOOKAHEAD_MS = 250;
/** Admissions of one item that fail for a reason other than a refusal, before it is skipped as ADMISSION_FAILED. */
export const MAX_ADMISSION_ATTEMPTS = 5;
/** The skip code of an item whose admission kept failing. */
export const ADMISSION_FAILED = 'ADMISSION_FAILED';
/** Whole-service outages: nothing can be admitted, the job waits, no item is blamed. */
const OUTAGE_CODES = new Set(['STORE_UNAVAILABLE', 'TEMPORAL_UNAVAILABLE']);

/** What the workflow paces and judges by. `GONE`: the job row no longer exists (retention). */
export interface JobTickState {
  status: RedriveJobStatus | 'GONE';
  batchSize: number;
  ratePerSecond: number;
  canary: number | null;
  haltOn: HaltOn;
  /** admitted + skipped */
  processed: number;
  remaining: number;
  admitted: number;
  running: number;
  succeeded: number;
  failedAgain: number;
  remoteOutcomeUnknown: number;
  /** an item could not be admitted and stays SELECTED (an outage, or an attempt below the limit): wait before the next try */
  unavailable: boolean;
  /** why the system halted it (PAUSED by a canary or haltOn); absent in states recorded before it */
  haltReason?: string | null;
  /** the control log's latest entry (who paused, resumed or aborted it, and why) */
  lastControl?: { action: string; principal: string; reason?: string } | null;
  /** who started the job and why (the reason cut to 200 characters: it rides in every tick's result) */
  startedBy?: { principal: string; reason: string };
  /** the job yields to live traffic (pipeline.redrive-job.yield-to-live); absent in states recorded before it */
  yieldToLive?: boolean;
  /** this tick's median admission, ms, without the waits for its rate: what a yielding job steers by (null: it admitted nothing) */
  admissionMs?: number | null;
}

/** An item's next admission slot falls after this tick's deadline: it is left SELECTED for the next tick. */
class SlotPastTick extends Error {
  constructor() {
    super('the next admission slot is past this tick');
    this.name = 'SlotPastTick';
  }
}

export class RedriveJobTicks {
  constructor(
    readonly store: RedriveJobStore,
    private readonly redrive: RedriveService,
    private readonly log: Log,
    private readonly metrics?: Metrics,
    /** items admitted at once by a tick: twice the jobs' pool size (pipeline.redrive-job.pool-size): an admission holds a connection for part of its time, and waits on Temporal for the rest */
    private readonly lanes = 4,
    /** pipeline.redrive-job.yield-to-live: the workflow steers the job's rate by its admissions' times (workflows/redrive-job-policy.ts, steerYield) */
    private readonly yieldToLive = false,
  ) {}

  private async read(tenantId: string, jobId: string): Promise<ParsedJob | null> {
    const job = await this.store.get(tenantId, jobId);
    return job ? parseJob(job) : null;
  }

  /**
   * Admits up to `max` due items in selection order, never more than `batchSize` runs in
   * flight, and only while the job is RUNNING (the job's gate around each admission refuses a job
   * that is not, so a pause stops the tick at its next admission; the job is read again after
   * each batch of a few dozen items). Given the job's `pace`, a tick that is behind
   * keeps admitting what falls due (at most `pace.cap` items, for about 5 s) rather than
   * returning for every batch. Given `yielding` (a job yielding to live traffic), the rate is
   * the lower of the asked one and the rate it allows itself now, which is written to the job
   * row when it changes (the API's view says so).
   */
  async admitDue(
    tenantId: string,
    jobId: string,
    max: number,
    heartbeat: () => void = () => undefined,
    pace?: Pace & { cap: number },
    yielding?: Yield,
  ): Promise<JobTickState> {
    const found = await this.read(tenantId, jobId);
    if (!found) return goneState(this.yieldToLive);
    let job: ParsedJob = found;
    if (yielding && job.status === 'RUNNING') job = await this.recordYielding(job, yielding);
    const rate = yielding ? Math.min(job.ratePerSecond, yielding.rate) : job.ratePerSecond;
    let counts = await this.store.counts(tenantId, jobId);
    const startedAt = Date.now();
    const processedAtStart = counts.admitted + counts.skipped;
    let unavailable = false;
    // The rate is a ceiling: admission statements are spaced 1/rate apart, from the job's
    // latest admission (in an earlier tick too), never sooner; time lost to a slow tick is not
    // made up in a burst. A refused item never takes a slot: skips do not count against the rate.
    // The spacing here is on this process's clock; the admission statement holds it on the
    // store's (store/job-gate.ts), so a statement that waited for a connection
    // or a lock cannot land closer to the previous one than 1/rate.
    const interval = 1000 / rate;
    // Each admitted item's own time (its checks, statement and Temporal start, without the waits for its slot).
    const took: number[] = [];
    const lastAdmitted = counts.lastAdmittedAt ? Date.parse(counts.lastAdmittedAt) : -Infinity;
    let nextAt = Math.max(Date.now(), lastAdmitted + interval);
    // A yielding job's tick hands back to the workflow after a steering interval, so its rate is steered that often.
    const budgetMs = yielding ? YIELD.everyMs : TICK_BUDGET_MS;
    const deadline = startedAt + Math.max(budgetMs, interval);
    let outOfTime = false;
    // The items read and not yet taken by a lane, and every item read in this tick (a read may
    // return items still being admitted: they are SELECTED until their statement commits).
    const queue: SelectedItem[] = [];
    const read = new Set<string>();
    let inFlight = 0;
    let taken = 0;
    let firstRead = true;
    let reading: Promise<boolean> | null = null;
    // Reads the job, its counts and the next items it has room for: false when it has none now.
    const readMore = async (): Promise<boolean> => {
      // Taken before the reads: an item admitted meanwhile is then counted twice (less room), never missed.
      const pending = inFlight + queue.length;
      job = (await this.read(tenantId, jobId)) ?? job;
      counts = await this.store.counts(tenantId, jobId);
      if (job.status !== 'RUNNING') return false;
      const processed = counts.admitted + counts.skipped;
      const due =
        firstRead || !pace || Date.now() - startedAt >= budgetMs
          ? max - taken - queue.length
          : Math.min(dueItems(pace, rate, processed, Date.now() + LOOKAHEAD_MS), pace.cap - (processed - processedAtStart)) - pending;
      firstRead = false;
      const room = Math.min(due, job.batchSize - counts.running - pending, counts.remaining - pending, this.lanes * ITEMS_PER_LANE - queue.length);
      if (room <= 0) return false;
      const items = await this.store.nextItems(tenantId, jobId, room + pending);
      const fresh = items.filter((item) => !read.has(item.executionId)).slice(0, room);
      for (const item of fresh) {
        read.add(item.executionId);
        queue.push(item);
      }
      return fresh.length > 0;
    };
    // One read at a time; a lane that finds the queue empty waits for it.
    const more = (): Promise<boolean> => {
      reading ??= readMore().finally(() => {
        reading = null;
      });
      return reading;
    };
    const nextItem = async (): Promise<SelectedItem | null> => {
      while (queue.length === 0) {
        if (outOfTime || unavailable) return null;
        if (!(await more()) && queue.length === 0) return null;
      }
      // Counted as in flight from here, before the read below takes its snapshot.
      const item = queue.shift()!;
      inFlight++;
      taken++;
      if (queue.length < this.lanes && !outOfTime && !unavailable) void more().catch(() => undefined);
      return item;
    };
    const current = job;
    const admitOne = async (item: SelectedItem): Promise<void> => {
      let waited = 0;
      const began = Date.now();
      // The slot is taken once the item's checks passed, right before its admission statement.
      const slot = async () => {
        const at = Math.max(nextAt, Date.now());
        if (at > deadline) throw new SlotPastTick();
        nextAt = at + interval;
        if (at > Date.now()) {
          waited += at - Date.now();
          await sleep(at - Date.now());
        }
      };
      // The statement's own gate found the job's previous admission too recent on the store's
      // clock: wait what is left of the spacing (the next slots move with it), within this tick.
      const tooSoon = async (waitMs: number) => {
        if (Date.now() + waitMs > deadline) throw new SlotPastTick();
        nextAt = Math.max(nextAt, Date.now() + waitMs + interval);
        waited += waitMs;
        await sleep(waitMs);
      };
      // The admission statement inside the job's gate, once the item's checks passed and its slot
      // came: a gate that finds the previous admission too recent (on the store's clock) changed
      // nothing, and the statement is tried again when the rest of the spacing is over.
      const gated: AdmissionScope = async (admission, admit) => {
        await slot();
        for (let refused = 0; ;) {
          try {
            return await admit(jobGate({ tenantId, jobId, spacingMs: interval, ...admission }));
          } catch (err) {
            if (!(err instanceof AdmissionTooSoonError)) throw err;
            if (++refused === 10)
              this.log.warn({ event: 'redrive_job_admission_held', tenantId, executionId: item.executionId, jobId, refused, waitMs: err.waitMs });
            await tooSoon(err.waitMs);
          }
        }
      };
      try {
        await this.redrive.redrive(tenantId, item.executionId, itemRequest(current.request, item), current.principal, { jobId, admitWithin: gated });
        took.push(Math.max(0, Math.round(Date.now() - began - waited)));
        this.metrics?.redriveJobItems.inc({ outcome: 'admitted' });
      } catch (err) {
        if (err instanceof SlotPastTick || err instanceof JobNotAdmittingError) {
          // Nothing changed: the item stays SELECTED for the next tick (a job no longer RUNNING is read again below).
          outOfTime = true;
        } else if (err instanceof PipelineError && err.status < 500) {
          if (await this.store.skip(tenantId, jobId, item.executionId, err.code)) {
            this.metrics?.redriveJobItems.inc({ outcome: 'skipped' });
            this.log.info({ event: 'redrive_job_item_skipped', tenantId, jobId, executionId: item.executionId, code: err.code });
          }
        } else {
          unavailable = true;
          await this.admissionFailed(tenantId, jobId, item.executionId, err);
        }
      }
    };
    const lane = async (): Promise<void> => {
      for (;;) {
        const item = await nextItem();
        if (!item) return;
        try {
          // The tick is over (its deadline, the job paused, an outage): the rest stay SELECTED for the next.
          if (outOfTime || unavailable) return;
          if (Math.max(nextAt, Date.now()) > deadline) {
            outOfTime = true;
            return;
          }
          await admitOne(item);
        } finally {
          inFlight--;
        }
        heartbeat();
      }
    };
    if (max > 0 && job.status === 'RUNNING') {
      // Every lane ends before the tick does (a read that failed stops the others at their next item), so no admission outlives its activity.
      const lanes = await Promise.allSettled(
        Array.from({ length: this.lanes }, () =>
          lane().catch((err: unknown) => {
            unavailable = true;
            throw err;
          }),
        ),
      );
      // A background read may still be running: the state below is read after it.
      await (reading as Promise<boolean> | null)?.catch(() => undefined);
      const failed = lanes.find((result) => result.status === 'rejected');
      if (failed) throw failed.reason;
      job = (await this.read(tenantId, jobId)) ?? job;
      counts = await this.store.counts(tenantId, jobId);
    }
    return tickState(job, counts, unavailable, this.yieldToLive, median(took));
  }

  /** Writes the rate the job allows itself and what it steered by, when either changed (null once it is back at the asked rate): about once a second. */
  private async recordYielding(job: ParsedJob, yielding: Yield): Promise<ParsedJob> {
    const rate = yielding.rate < job.ratePerSecond ? yielding.rate : null;
    if (rate === (job.yielding?.rate ?? null) && (rate === null || yielding.latestMs === job.yielding?.latestMs)) return job;
    const next = rate === null ? null : { rate, quietestMs: yielding.quietestMs, latestMs: yielding.latestMs, at: new Date().toISOString() };
    await this.store.setYielding(job.tenantId, job.jobId, next);
    return { ...job, yielding: next };
  }

  /** An outage defers the item; anything else counts an attempt, and the last one skips it as ADMISSION_FAILED. */
  private async admissionFailed(tenantId: string, jobId: string, executionId: string, err: unknown): Promise<void> {
    const error = err instanceof PipelineError ? err.code : err instanceof Error ? err.name : 'unknown';
    if (err instanceof PipelineError && OUTAGE_CODES.has(err.code)) {
      this.metrics?.redriveJobItems.inc({ outcome: 'deferred' });
      this.log.warn({ event: 'redrive_job_item_deferred', tenantId, jobId, executionId, error });
      return;
    }
    const at = await this.store.recordAdmissionFailure(tenantId, jobId, executionId, MAX_ADMISSION_ATTEMPTS);
    if (!at) return;
    if (at.skipped) {
      this.metrics?.redriveJobItems.inc({ outcome: 'admission_failed' });
      this.log.warn({ event: 'redrive_job_item_skipped', tenantId, jobId, executionId, code: ADMISSION_FAILED, attempts: at.attempts, error });
    } else {
      this.metrics?.redriveJobItems.inc({ outcome: 'deferred' });
      this.log.warn({ event: 'redrive_job_item_deferred', tenantId, jobId, executionId, error, attempts: at.attempts, maxAttempts: MAX_ADMISSION_ATTEMPTS });
    }
  }

  /** RUNNING → PAUSED with the reason (the control log says "halt", by "system"). */
  async halt(tenantId: string, jobId: string, reason: string): Promise<JobTickState> {
    const entry = { action: 'halt' as const, principal: 'system', at: new Date().toISOString(), reason };
    const moved = await this.store.transition({ tenantId, jobId, from: ['RUNNING'], to: 'PAUSED', entry, haltReason: reason });
    if (moved) this.log.warn({ event: 'redrive_job_halted', tenantId, jobId, reason });
    return this.admitDue(tenantId, jobId, 0);
  }

  /** RUNNING → COMPLETED once no item is left to process. */
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

  /**
   * RUNNING or PAUSED → ABORTED: its workflow was cancelled in Temporal ("Request
   * Cancellation"), after its last tick ended. The control log says "abort", by "temporal".
   */
  async cancelled(tenantId: string, jobId: string): Promise<JobTickState> {
    const entry = {
      action: 'abort' as const,
      principal: 'temporal',
      at: new Date().toISOString(),
      reason: 'its workflow was cancelled in Temporal (Request Cancellation)',
    };
    const moved = await this.store.transition({ tenantId, jobId, from: ['RUNNING', 'PAUSED'], to: 'ABORTED', entry, haltReason: null });
    if (moved) this.log.warn({ event: 'redrive_job_cancelled_in_temporal', tenantId, jobId });
    return this.admitDue(tenantId, jobId, 0);
  }

  /** RUNNING or PAUSED → FAILED with the reason: the workflow could not go on (the control log says "fail", by "system"). */
  async fail(tenantId: string, jobId: string, reason: string): Promise<void> {
    const entry = { action: 'fail' as const, principal: 'system', at: new Date().toISOString(), reason };
    const moved = await this.store.transition({ tenantId, jobId, from: ['RUNNING', 'PAUSED'], to: 'FAILED', entry, haltReason: null, failureReason: reason });
    if (moved) this.log.error({ event: 'redrive_job_failed', tenantId, jobId, reason });
  }
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

function goneState(yieldToLive: boolean): JobTickState {
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
    yieldToLive,
    admissionMs: null,
  };
}

function tickState(job: ParsedJob, counts: JobCounts, unavailable: boolean, yieldToLive: boolean, admissionMs: number | null): JobTickState {
  return {
    status: job.status,
    batchSize: job.batchSize,
    ratePerSecond: job.ratePerSecond,
    canary: job.canary,
    haltOn: job.haltOn,
    processed: counts.admitted + counts.skipped,
    remaining: counts.remaining,
    admitted: counts.admitted,
    running: counts.running,
    succeeded: counts.succeeded,
    failedAgain: counts.failedAgain,
    remoteOutcomeUnknown: counts.remoteOutcomeUnknown,
    unavailable,
    haltReason: job.haltReason,
    lastControl: lastControl(job),
    startedBy: { principal: job.principal, reason: job.reason.slice(0, 200) },
    yieldToLive,
    admissionMs,
  };
}

/** The latest control entry, without its time (the details show who and why). */
function lastControl(job: ParsedJob): JobTickState['lastControl'] {
  const entry = job.controlLog.at(-1);
  if (!entry) return null;
  return { action: entry.action, principal: entry.principal, ...(entry.reason ? { reason: entry.reason.slice(0, 200) } : {}) };
}
