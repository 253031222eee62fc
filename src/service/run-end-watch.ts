/**
 * Notices a pipeline run that Temporal closed without the engine ending it: **Terminate** (the
 * Temporal UI's button or `temporal workflow terminate`, and what a Reset does to a run still
 * running), **Request Cancellation**, or a run timeout. No step commits after that, so the
 * record would stay RUNNING (or QUEUED, when the run ended before its first step took it)
 * with nothing to carry it on. The watch ends it FAILED at the step it was at, with a DLQ
 * envelope (`RUN_TERMINATED`, `RUN_CANCELLED`, `RUN_TIMED_OUT`; `non_retryable`), so it shows
 * where failed executions show (the DLQ, its groups, triage, `executions --status FAILED`) and
 * a re-drive with `allowFailed=true` runs it again from that step.
 *
 * One visibility query per pass, at most every `everyMs`: the runs of this task queue's
 * pipeline workflow closed in one of those ways within a window of close times. Each one found
 * is looked up in the store by its run id: only a record that run still owns (RUNNING under
 * it, or QUEUED for the dispatch it was started for) is ended, so a record re-driven since,
 * or owned by another deployment on the same Temporal namespace, is never touched. A run
 * closed less than `graceMs` ago (the step heartbeat timeout) waits for a later pass: a step
 * still running when its run was closed learns it at its next heartbeat and commits nothing,
 * and one that finished first has committed by then.
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Log } from '../log';
import type { ExecutionStore } from '../store/execution-store';
import { withCallDeadline } from '../temporal/call-deadline';

/** How Temporal closed a run the engine did not end, as the watch names it. */
export type RunEnding = 'TERMINATED' | 'CANCELLED' | 'TIMED_OUT';

/** A run Temporal closed that still owns its record, and the step the record is at. */
export interface EndedRun {
  tenantId: string;
  executionId: string;
  runId: string;
  ending: RunEnding;
  stepIndex: number;
  /** the dispatch the record is QUEUED for, when the run ended before its first step took it */
  dispatchId?: string;
  closedAt: Date;
}

/** Ends the record FAILED for the run (see `createRunEnder`); false when the record moved meanwhile. */
export type EndRun = (run: EndedRun) => Promise<boolean>;

/** How far back the first pass after a start looks (the service may have been down when a run was terminated). */
export const FIRST_PASS_LOOKBACK_MS = 24 * 60 * 60 * 1000;
/** Each window starts this long before the last one ended: visibility is written a moment after a run closes. */
const WINDOW_OVERLAP_MS = 60_000;
/** Closed runs looked at per pass. A window with more is halved for the next pass, down to a second. */
const PER_PASS = 500;

const ENDINGS: Record<string, RunEnding> = { TERMINATED: 'TERMINATED', CANCELLED: 'CANCELLED', TIMED_OUT: 'TIMED_OUT' };

/** `pipeline/{tenant}/{execution}` back into its ids; undefined for any other workflow id. */
function idsOf(workflowId: string): { tenantId: string; executionId: string } | undefined {
  const parts = workflowId.split('/');
  return parts.length === 3 && parts[0] === 'pipeline' ? { tenantId: parts[1], executionId: parts[2] } : undefined;
}

export class RunEndWatch {
  private last = 0;
  private from: number | undefined;
  /** the end of a window halved because it held more than PER_PASS runs */
  private narrowedTo: number | undefined;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly store: Pick<ExecutionStore, 'unfinishedOfRun'>,
    private readonly endRun: EndRun,
    private readonly log: Log,
    private readonly options: { everyMs: number; graceMs: number; callTimeoutMs: number; workflowType?: string },
  ) {}

  /** One pass, unless the last was under `everyMs` ago; returns how many records it ended. */
  async sweepOnce(now = Date.now()): Promise<number> {
    if (now - this.last < this.options.everyMs) return 0;
    this.last = now;
    const from = this.from ?? now - FIRST_PASS_LOOKBACK_MS;
    const to = Math.min(this.narrowedTo ?? Infinity, now - this.options.graceMs);
    if (to <= from) return 0;
    const closed = await this.closedRuns(from, to);
    if (closed === undefined) return 0; // Temporal did not answer: the next pass looks at the same window
    let ended = 0;
    for (const run of closed.runs) {
      const ids = idsOf(run.workflowId);
      if (!ids) continue;
      const at = await this.store.unfinishedOfRun(ids.tenantId, ids.executionId, run.runId);
      if (!at) continue;
      // Visibility lists a run deleted a moment ago (a run deleted is gone, not closed: its record
      // stalls, and ordinary replay resumes it): ask for the run itself before ending its record.
      const state = await this.runState(run.workflowId, run.runId);
      if (state === 'unanswered') return ended; // the next pass looks at the same window again
      if (state === 'gone') continue;
      const endedRun: EndedRun = { ...ids, runId: run.runId, ending: run.ending, closedAt: run.closedAt, ...at };
      if (!(await this.endRun(endedRun))) continue;
      ended++;
      this.log.warn({
        event: 'execution_run_ended_in_temporal',
        tenantId: ids.tenantId,
        executionId: ids.executionId,
        runId: run.runId,
        ending: run.ending,
        stepIndex: at.stepIndex,
        closedAt: run.closedAt.toISOString(),
      });
    }
    // A pass that saw every run of its window moves on; one cut short looks at the first half of it
    // next (a window of a second or less moves on regardless, its first PER_PASS runs done).
    if (closed.complete || to - from <= 1000) {
      this.from = Math.max(from, to - WINDOW_OVERLAP_MS);
      this.narrowedTo = undefined;
    } else {
      this.narrowedTo = from + Math.floor((to - from) / 2);
      this.log.warn({ event: 'execution_run_watch_window_narrowed', from: new Date(from).toISOString(), to: new Date(this.narrowedTo).toISOString() });
    }
    return ended;
  }

  /** Whether Temporal still has the run, closed as listed; 'gone' once deleted. */
  private async runState(workflowId: string, runId: string): Promise<'closed' | 'gone' | 'unanswered'> {
    try {
      const description = await withCallDeadline(this.client, this.options.callTimeoutMs, () => this.client.workflow.getHandle(workflowId, runId).describe());
      return ENDINGS[description.status.name] !== undefined ? 'closed' : 'gone';
    } catch (err) {
      return err instanceof WorkflowNotFoundError ? 'gone' : 'unanswered';
    }
  }

  /** The runs closed by Terminate, cancellation or timeout in (from, to]; undefined when Temporal did not answer. */
  private async closedRuns(
    from: number,
    to: number,
  ): Promise<{ runs: { workflowId: string; runId: string; ending: RunEnding; closedAt: Date }[]; complete: boolean } | undefined> {
    const query =
      `WorkflowType = '${this.options.workflowType ?? 'pipelineWorkflow'}' AND TaskQueue = '${this.taskQueue.replace(/'/g, "\\'")}'` +
      ` AND ExecutionStatus IN ('Terminated', 'Canceled', 'TimedOut')` +
      ` AND CloseTime > '${new Date(from).toISOString()}' AND CloseTime <= '${new Date(to).toISOString()}'`;
    try {
      return await withCallDeadline(this.client, this.options.callTimeoutMs, async () => {
        const runs: { workflowId: string; runId: string; ending: RunEnding; closedAt: Date }[] = [];
        for await (const info of this.client.workflow.list({ query, pageSize: 100 })) {
          const ending = ENDINGS[info.status.name];
          if (ending && info.closeTime) runs.push({ workflowId: info.workflowId, runId: info.runId, ending, closedAt: info.closeTime });
          if (runs.length >= PER_PASS) return { runs, complete: false };
        }
        return { runs, complete: true };
      });
    } catch (err) {
      this.log.warn({ event: 'execution_run_watch_unanswered', error: err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 300) : String(err) });
      return undefined;
    }
  }
}
