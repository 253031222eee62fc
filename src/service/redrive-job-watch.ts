/**
 * Notices a bulk re-drive job whose workflow ended in Temporal while the store still has it
 * RUNNING or PAUSED: "Terminate" in the Temporal UI or CLI (which no workflow code can
 * catch), a workflow that timed out, or one gone from Temporal. Nothing would pace such a
 * job again, so it is marked FAILED with why; its items stay as they are (each was admitted
 * whole in one statement, or is still SELECTED and can go into a new job). "Request
 * Cancellation" is handled by the workflow itself (the job is ABORTED).
 *
 * Runs with the job start sweeper, at most every `everyMs`: one describe call per
 * unfinished job.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Log } from '../log';
import type { RedriveJobStore } from '../store/redrive-job-store';
import { withCallDeadline } from '../temporal/call-deadline';
import { jobWorkflowId } from './redrive-job-request';
import type { RedriveJobTicks } from './redrive-job-ticks';

/** Unfinished jobs looked at per pass (oldest change first). */
const PER_PASS = 50;

export class RedriveJobWatch {
  private last = 0;
  constructor(
    private readonly jobs: RedriveJobStore,
    private readonly client: Client,
    private readonly ticks: Pick<RedriveJobTicks, 'fail'>,
    private readonly log: Log,
    private readonly everyMs: number,
    private readonly callTimeoutMs = 5000,
  ) {}

  /** One pass, unless the last was under `everyMs` ago; returns how many jobs it marked FAILED. */
  async sweepOnce(now = Date.now()): Promise<number> {
    if (now - this.last < this.everyMs) return 0;
    this.last = now;
    let marked = 0;
    for (const row of await this.jobs.unfinishedStarted(PER_PASS)) {
      const ended = await this.workflowEnded(row.tenantId, row.jobId);
      if (ended === undefined) break; // Temporal did not answer: the next pass looks again
      if (ended === null) continue;
      const reason = `its workflow ${ended} in Temporal while the job was ${row.status}; nothing paces it any more. Items not admitted stay SELECTED: start a new job to re-drive them`;
      await this.ticks.fail(row.tenantId, row.jobId, reason);
      this.log.warn({ event: 'redrive_job_workflow_ended', tenantId: row.tenantId, jobId: row.jobId, workflow: ended });
      marked++;
    }
    return marked;
  }

  /** How the job's workflow ended ("was terminated", …), null while it runs, undefined when Temporal did not answer. */
  private async workflowEnded(tenantId: string, jobId: string): Promise<string | null | undefined> {
    try {
      const description = await withCallDeadline(this.client, this.callTimeoutMs, () =>
        this.client.workflow.getHandle(jobWorkflowId(tenantId, jobId)).describe(),
      );
      const status = description.status.name;
      if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') return null;
      return status === 'TERMINATED' ? 'was terminated' : `ended ${status}`;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return 'is gone';
      return undefined;
    }
  }
}
