/**
 * The activities of the bulk re-drive job workflow. Each reads the job from the store
 * and answers its state; `redriveJobTick` admits the due items through the single
 * re-drive's own admission (RedriveJobs.admitDue), heartbeating per item so a killed
 * worker's tick is redelivered within the heartbeat timeout.
 */
import { Context } from '@temporalio/activity';
import type { RedriveJobs } from '../service/redrive-jobs';
import type { RedriveJobStatus } from '../store/redrive-job-store';
import type { HaltOn, Pace } from '../workflows/redrive-job-policy';

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
  /** an item could not be judged because Temporal or Postgres did not answer; it stays SELECTED */
  unavailable: boolean;
}

/** Well inside the workflow's 10 s heartbeat timeout. */
const HEARTBEAT_EVERY_MS = 2000;

export type RedriveJobActivities = ReturnType<typeof createRedriveJobActivities>;

export function createRedriveJobActivities(jobs: RedriveJobs) {
  const heartbeat = () => {
    try {
      Context.current().heartbeat();
    } catch {
      // outside an activity (tests): nothing to beat
    }
  };
  return {
    /** Admits up to `max` due items (0 = only read the state); with `pace`, goes on admitting what falls due meanwhile, at most `pace.cap` in all. */
    async redriveJobTick(req: { tenantId: string; jobId: string; max: number; pace?: Pace & { cap: number } }): Promise<JobTickState> {
      // On a clock as well as per item: one item can wait on Temporal for the whole call deadline.
      const beat = setInterval(heartbeat, HEARTBEAT_EVERY_MS);
      try {
        return await jobs.admitDue(req.tenantId, req.jobId, req.max, heartbeat, req.pace);
      } finally {
        clearInterval(beat);
      }
    },
    /** RUNNING → PAUSED with the reason (the control log says "halt", by "system"). */
    async redriveJobHalt(req: { tenantId: string; jobId: string; reason: string }): Promise<JobTickState> {
      return jobs.halt(req.tenantId, req.jobId, req.reason);
    },
    /** RUNNING → COMPLETED once no item is left to process. */
    async redriveJobFinish(req: { tenantId: string; jobId: string }): Promise<JobTickState> {
      return jobs.finish(req.tenantId, req.jobId);
    },
  };
}
