/**
 * The activities of the bulk re-drive job workflow. Each reads the job from the store
 * and answers its state; `redriveJobTick` admits the due items through the single
 * re-drive's own admission (RedriveJobTicks.admitDue), heartbeating per item so a killed
 * worker's tick is redelivered within the heartbeat timeout.
 */
import { Context } from '@temporalio/activity';
import type { JobTickState, RedriveJobTicks } from '../service/redrive-job-ticks';
import type { Pace, Yield } from '../workflows/redrive-job-policy';

export type { JobTickState } from '../service/redrive-job-ticks';

/** Well inside the workflow's 10 s heartbeat timeout. */
const HEARTBEAT_EVERY_MS = 2000;

export type RedriveJobActivities = ReturnType<typeof createRedriveJobActivities>;

/** Asks Temporal to cancel the run of the workflow that called this activity (its worker's client). */
export async function requestOwnWorkflowCancel(_req: { tenantId: string; jobId: string }): Promise<void> {
  const { info, client } = Context.current();
  const run = info.workflowExecution;
  if (!run) throw new Error('requestOwnWorkflowCancel runs only as a workflow activity');
  await client.workflow.getHandle(run.workflowId, run.runId).cancel();
}

export function createRedriveJobActivities(ticks: RedriveJobTicks) {
  const heartbeat = () => {
    try {
      Context.current().heartbeat();
    } catch {
      // outside an activity (tests): nothing to beat
    }
  };
  return {
    /**
     * Admits up to `max` due items (0 = only read the state); with `pace`, goes on admitting what
     * falls due meanwhile, at most `pace.cap` in all; with `yielding`, at the rate the job allows itself.
     */
    async redriveJobTick(req: { tenantId: string; jobId: string; max: number; pace?: Pace & { cap: number }; yielding?: Yield }): Promise<JobTickState> {
      // On a clock as well as per item: one item can wait on Temporal for the whole call deadline.
      const beat = setInterval(heartbeat, HEARTBEAT_EVERY_MS);
      try {
        return await ticks.admitDue(req.tenantId, req.jobId, req.max, heartbeat, req.pace, req.yielding);
      } finally {
        clearInterval(beat);
      }
    },
    /** RUNNING → PAUSED with the reason (the control log says "halt", by "system"). */
    async redriveJobHalt(req: { tenantId: string; jobId: string; reason: string }): Promise<JobTickState> {
      return ticks.halt(req.tenantId, req.jobId, req.reason);
    },
    /** RUNNING → COMPLETED once no item is left to process. */
    async redriveJobFinish(req: { tenantId: string; jobId: string }): Promise<JobTickState> {
      return ticks.finish(req.tenantId, req.jobId);
    },
    /** RUNNING or PAUSED → ABORTED: the workflow was cancelled in Temporal. */
    async redriveJobCancelled(req: { tenantId: string; jobId: string }): Promise<JobTickState> {
      return ticks.cancelled(req.tenantId, req.jobId);
    },
    /**
     * An abort through the API: asks Temporal to cancel the calling job workflow's own run (a
     * workflow cannot cancel itself), so it ends CANCELED. Already closing counts as done.
     */
    redriveJobRequestCancel: requestOwnWorkflowCancel,
    /** RUNNING or PAUSED → FAILED with the reason: the workflow could not go on. */
    async redriveJobFail(req: { tenantId: string; jobId: string; reason: string }): Promise<void> {
      return ticks.fail(req.tenantId, req.jobId, req.reason);
    },
  };
}
