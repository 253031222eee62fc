/**
 * One bulk re-drive job = one run of this workflow (`redrive-job/{tenant}/{jobId}`). It
 * only paces: every admission, skip, halt and status change is an activity on the store,
 * which is the job's truth (the API's pause / resume / abort write the store, then wake
 * this workflow with a signal; a lost signal costs at most one poll interval). Durable
 * timers pace the items at the job's rate; the activity admits at most the due items and
 * never more than `batchSize` re-driven runs in flight. A canary admits its items first
 * and waits for their outcome before the rest. A job that yields to live traffic
 * (`pipeline.redrive-job.yield-to-live`, the tick says so) paces at the rate it allows itself,
 * steered after each tick by how long the tick's admissions took (redrive-job-policy.ts,
 * steerYield), never above the asked rate.
 *
 * Its activities retry a bounded number of times (a bug in one must not retry silently for
 * ever): when they give up, the job is marked FAILED with the reason (redriveJobFail) and
 * the workflow fails with it, so the API, the CLI and Temporal all say why.
 *
 * What Temporal's list shows (the redrive-job-status-shown patch): the `PipelineJobStatus`
 * search attribute follows the job (RUNNING, PAUSED, HALTED, COMPLETED, ABORTED, FAILED), and
 * an aborted job's workflow ends CANCELED, never Completed: an abort through the API asks
 * Temporal to cancel this run (redriveJobRequestCancel), which then ends as "Request
 * Cancellation" does.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  isCancellation,
  patched,
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RedriveJobActivities, JobTickState } from '../activities/redrive-job-activities';
import { dueItems, haltVerdict, msUntilNextDue, startYield, steerYield, type OutcomeCounts, type Pace, type Yield } from './redrive-job-policy';
import { jobCurrentDetails, jobSearchStatus } from './redrive-job-details';
import { PipelineJobStatus } from './search-attributes';

/** Sent by the API after it changed the job's status in the store: look again now. */
export const redriveJobWake = defineSignal('redriveJobWake');

/** What a run hands the next one when the history grows long (continue-as-new). */
export interface RedriveJobCarry {
  canaryDone: boolean;
  pace: Pace | null;
  baseline: OutcomeCounts | null;
  /** the rate a job yielding to live traffic allows itself; absent before it */
  yield?: Yield | null;
}

/** Limits a test (or an operator starting a job by hand) may lower; the defaults hold otherwise. Carried across continue-as-new. */
export interface RedriveJobLimits {
  /** continue as new once the history holds more events than this (default 8,000) */
  historyLength?: number;
  /** attempts of each activity before the job ends FAILED (default 15: about 5 minutes of backoff) */
  activityAttempts?: number;
}

export interface RedriveJobInput {
  tenantId: string;
  jobId: string;
  carry?: RedriveJobCarry;
  limits?: RedriveJobLimits;
}

/** The failure type a job's workflow ends with when its activities gave up. */
export const REDRIVE_JOB_FAILED = 'RedriveJobFailed';

/** How often a job re-reads the store while it waits for room, its canary, or a resume. */
const POLL_MS = 1000;
const PAUSED_POLL = '1 minute';
/** The shortest pacing sleep: items due within it go together (a 50/s job admits about 10 per tick). */
const PACE_TICK_MS = 200;
/** Waiting after Temporal or Postgres could not admit an item. */
const UNAVAILABLE_BACKOFF_MS = 5000;
/** A tick admits at most this many items (the activity's heartbeat covers each). */
const MAX_PER_TICK = 1000;
/** Continue as new well before Temporal's history limits. */
const HISTORY_LIMIT = 8000;
/** 1 + 2 + 4 + 8 + 16 s, then 30 s apart: 15 attempts span about 5 minutes (a Postgres restart is shorter). */
const ACTIVITY_ATTEMPTS = 15;

function outcomes(state: JobTickState): OutcomeCounts {
  return { succeeded: state.succeeded, failedAgain: state.failedAgain, remoteOutcomeUnknown: state.remoteOutcomeUnknown };
}

export async function redriveJobWorkflow(input: RedriveJobInput): Promise<{ status: string; processed: number }> {
  const { tenantId, jobId, limits } = input;
  const carry: RedriveJobCarry = input.carry ?? { canaryDone: false, pace: null, baseline: null };
  const historyLimit = limits?.historyLength ?? HISTORY_LIMIT;
  const attempts = limits?.activityAttempts ?? ACTIVITY_ATTEMPTS;
  const activities = proxyActivities<RedriveJobActivities>({
    startToCloseTimeout: '10 minutes',
    // The tick heartbeats every 2 s while it works: a killed worker's tick is redelivered within 10 s.
    heartbeatTimeout: '10 seconds',
    // A cancellation waits for the activity in flight to end: an abort is recorded after the last admission, never during one.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: attempts },
  });
  // Marking the job FAILED gets longer (about 25 minutes): the store may be what is down.
  const { redriveJobFail, redriveJobCancelled, redriveJobRequestCancel } = proxyActivities<RedriveJobActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 30 },
  });
  /** The job's state as a search attribute, upserted when it changes (one history event each). */
  let shown: string | undefined;
  const showStatus = (status: string | undefined) => {
    if (status === undefined || status === shown || !patched('redrive-job-status-shown')) return;
    shown = status;
    upsertSearchAttributes([{ key: PipelineJobStatus, value: status }]);
  };
  /** Runs an activity; when it gave up, marks the job FAILED with why and fails the workflow with the same reason. */
  const guarded = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
      const cause = err.cause instanceof Error ? err.cause.message : 'unknown';
      const reason = `the job's ${what} activity failed ${attempts} times; last: ${cause}`.slice(0, 500);
      try {
        await redriveJobFail({ tenantId, jobId, reason });
      } catch {
        // the store stayed down: Temporal still records the reason below
      }
      showStatus('FAILED');
      throw ApplicationFailure.create({ type: REDRIVE_JOB_FAILED, message: reason, nonRetryable: true });
    }
  };
  const redriveJobTick = (req: Parameters<typeof activities.redriveJobTick>[0]) => guarded('tick', () => activities.redriveJobTick(req));
  const redriveJobHalt = (req: Parameters<typeof activities.redriveJobHalt>[0]) => guarded('halt', () => activities.redriveJobHalt(req));
  const redriveJobFinish = (req: Parameters<typeof activities.redriveJobFinish>[0]) => guarded('finish', () => activities.redriveJobFinish(req));
  let woken = false;
  setHandler(redriveJobWake, () => {
    woken = true;
  });
  // A wake-up counts from the moment the state was last read: one that arrives while an
  // activity reads it is not lost, the next nap returns at once.
  const nap = async (ms: number | string) => {
    await condition(() => woken, ms);
  };
  const tick = (req: Omit<Parameters<typeof redriveJobTick>[0], 'tenantId' | 'jobId'>) => {
    woken = false;
    return redriveJobTick({ tenantId, jobId, ...req });
  };
  const halt = (reason: string) => {
    woken = false;
    return redriveJobHalt({ tenantId, jobId, reason });
  };

  const paceJob = async (): Promise<{ status: string; processed: number }> => {
    let state = await tick({ max: 0 });
    for (;;) {
      // A job yielding to live traffic steers its rate by the admissions the tick just made; a
      // new rate starts a new pace (no burst when it grows, nothing owed when it shrinks).
      const asked = state.ratePerSecond;
      const yields = state.status === 'RUNNING' && state.yieldToLive === true && patched('redrive-job-yield');
      if (yields) {
        const before = carry.yield?.rate;
        carry.yield = carry.yield ? steerYield(carry.yield, asked, state.admissionMs ?? null, Date.now()) : startYield(asked, Date.now());
        if (carry.pace && before !== carry.yield.rate) carry.pace = { originMs: Date.now(), processedAtOrigin: state.processed };
      }
      const rate = yields && carry.yield ? Math.min(asked, carry.yield.rate) : asked;
      // The Temporal UI's "current details": the job as just read (no history event, no command).
      setCurrentDetails(jobCurrentDetails(tenantId, jobId, state, yields ? carry.yield : null));
      showStatus(jobSearchStatus(state));
      if (state.status === 'ABORTED' && patched('redrive-job-status-shown')) {
        // Aborted through the API: ask Temporal to cancel this run, then end as a cancellation
        // does (below), so the list shows Canceled. The request's activity cannot itself be
        // cancelled by it; the wait that follows is.
        await CancellationScope.nonCancellable(() => redriveJobRequestCancel({ tenantId, jobId }));
        await condition(() => false);
      }
      if (state.status === 'ABORTED' || state.status === 'COMPLETED' || state.status === 'FAILED' || state.status === 'GONE')
        return { status: state.status, processed: state.processed };
      if (workflowInfo().historyLength > historyLimit || workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof redriveJobWorkflow>({ tenantId, jobId, carry, ...(limits ? { limits } : {}) });
      }
      if (state.status === 'PAUSED') {
        // A resume starts a new pace and a new baseline: the failures it was halted for do not halt it again.
        // A yielding job starts again from a fifth of its rate and learns its quietest admission anew.
        carry.pace = null;
        carry.yield = null;
        await nap(PAUSED_POLL);
        state = await tick({ max: 0 });
        continue;
      }
      if (!carry.pace || !carry.baseline) {
        carry.pace = { originMs: Date.now(), processedAtOrigin: state.processed };
        carry.baseline = outcomes(state);
      }
      const canaryPhase = state.canary !== null && !carry.canaryDone;
      if (canaryPhase && (state.admitted >= state.canary! || state.remaining === 0)) {
        // The canary is in: wait for every one of its runs to end, then judge on them alone.
        if (state.running > 0) {
          await nap(POLL_MS);
          state = await tick({ max: 0 });
          continue;
        }
        carry.canaryDone = true;
        // The wait for the canary is not owed to the rest: the pace starts again from here.
        carry.pace = { originMs: Date.now(), processedAtOrigin: state.processed };
        const finished =
          state.succeeded +
          state.failedAgain +
          state.remoteOutcomeUnknown -
          (carry.baseline.succeeded + carry.baseline.failedAgain + carry.baseline.remoteOutcomeUnknown);
        const verdict = haltVerdict(outcomes(state), carry.baseline, state.haltOn, Math.min(state.haltOn.minFinished, finished));
        if (verdict) state = await halt(`canary of ${state.canary}: ${verdict}`);
        continue;
      }
      const verdict = haltVerdict(outcomes(state), carry.baseline, state.haltOn);
      if (verdict) {
        state = await halt(verdict);
        continue;
      }
      if (state.remaining === 0) {
        woken = false;
        state = await redriveJobFinish({ tenantId, jobId });
        continue;
      }
      const pace = carry.pace;
      const cap = canaryPhase ? state.canary! - state.admitted : MAX_PER_TICK;
      const due = Math.min(dueItems(pace, rate, state.processed, Date.now()), cap, MAX_PER_TICK);
      const room = state.batchSize - state.running;
      let wait = 0;
      if (state.unavailable) wait = UNAVAILABLE_BACKOFF_MS;
      else if (room <= 0) wait = POLL_MS;
      else if (due <= 0) wait = Math.max(msUntilNextDue(pace, rate, state.processed, Date.now()), PACE_TICK_MS);
      if (wait > 0) await nap(wait);
      if (room <= 0 || state.unavailable) {
        // Time spent waiting for room (or for Temporal or Postgres) is not owed: no burst past the rate when it frees.
        carry.pace = { originMs: Date.now(), processedAtOrigin: state.processed };
      }
      const max = Math.min(dueItems(carry.pace, rate, state.processed, Date.now()), cap, MAX_PER_TICK);
      state = await tick({ max, pace: { ...carry.pace, cap: Math.min(cap, MAX_PER_TICK) }, ...(yields && carry.yield ? { yielding: carry.yield } : {}) });
    }
  };
  try {
    return await paceJob();
  } catch (err) {
    // "Request Cancellation" in the Temporal UI (or `temporal workflow cancel`): the tick in
    // flight has ended (its activities wait for their cancellation), so the job is aborted in
    // the store with every item either admitted whole or still SELECTED; the workflow then
    // ends Canceled. Terminate cannot be caught here: see service/redrive-job-watch.ts.
    if (!isCancellation(err) || !patched('redrive-job-cancel-aborts')) throw err;
    const state = await CancellationScope.nonCancellable(() => redriveJobCancelled({ tenantId, jobId }));
    setCurrentDetails(jobCurrentDetails(tenantId, jobId, state));
    showStatus(jobSearchStatus(state));
    throw err;
  }
}
