/**
 * Notices a pipeline run that Temporal closed without the engine ending it: **Terminate** (the
 * Temporal UI's button or `temporal workflow terminate`, a Reset of a run still running, or
 * Temporal itself, say at a history limit), **Request Cancellation**, or a run timeout. No step
 * commits after that, so the record would stay RUNNING (or QUEUED, when the run ended before
 * its first step took it) with nothing to carry it on. The watch ends it FAILED at the step it
 * was at, with a DLQ envelope (`RUN_TERMINATED`, `RUN_CANCELLED`, `RUN_TIMED_OUT`;
 * `non_retryable`), so it shows where failed executions show (the DLQ, its groups, triage,
 * `executions --status FAILED`) and a re-drive with `allowFailed=true` runs it on from that step.
 *
 * Each pass (at most every `everyMs`, in every worker process) pages through one visibility
 * query: this task queue's pipeline runs closed in one of those ways within a window of close
 * times. Each page's runs are looked up in the store in one statement; only a record a run
 * still owns (RUNNING under it, or QUEUED for the dispatch it was started for) is ended, after
 * one more describe of the run, so a record re-driven since, one another deployment on the same
 * namespace owns, or one whose run was deleted (gone, not stopped) is never touched. The
 * window's lower end moves on only after a pass saw every page and ended every record it
 * found; a pass cut short (Temporal or Postgres did not answer) leaves it, and the next pass
 * lists the same runs again (the ones already ended are skipped by the lookup). Runs closed
 * less than `graceMs` ago (the step heartbeat timeout) wait for a later pass: a step in flight
 * when its run was stopped learns it at its next heartbeat (its operator's `ctx.signal`
 * aborts) and commits nothing, and one that finished first has committed.
 */
import type { Client } from '@temporalio/client';
import { idsOfWorkflowId, workflowIdFor } from '../ids';
import type { Log } from '../log';
import type { ExecutionStore } from '../store/execution-store';
import { withCallDeadline } from '../temporal/call-deadline';
import { errorLine } from '../errors';

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
  /** who terminated the run and why, as Temporal recorded it (a terminated run's close event), when it could be read */
  terminatedBy?: { identity: string; reason: string };
}

/**
 * Ends the record FAILED for the run (see `createRunEnder`): 'ended' when this call committed
 * it, 'moved' when the record is no longer the run's to end (a step or another watch committed
 * first, a re-drive came in).
 */
export type EndRun = (run: EndedRun) => Promise<'ended' | 'moved'>;

/** How far back the first pass after a start looks (the service may have been down when a run was stopped). */
export const FIRST_PASS_LOOKBACK_MS = 24 * 60 * 60 * 1000;
/**
 * Each window starts this long before the last one ended: visibility is written after a run
 * closes (moments on the dev server, longer on a busy Elasticsearch), and clocks differ. Runs
 * listed again cost one row each in the page's store lookup.
 */
const WINDOW_OVERLAP_MS = 5 * 60_000;
const PAGE_SIZE = 200;
/** HistoryEventFilterType CLOSE_EVENT: only the run's close event. */
const CLOSE_EVENT = 2;

/** Operator-typed text for a record's message: bounded, control characters replaced. */
const printable = (text: string, max: number) => text.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, max);

/** Temporal's WorkflowExecutionStatus values of the closes the watch ends records for. */
const ENDINGS: Record<number, RunEnding | undefined> = { 4: 'CANCELLED', 5: 'TERMINATED', 7: 'TIMED_OUT' };
const ENDING_NAMES: Record<string, RunEnding | undefined> = { CANCELLED: 'CANCELLED', TERMINATED: 'TERMINATED', TIMED_OUT: 'TIMED_OUT' };

/** A visibility query's string literal. */
const literal = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

export class RunEndWatch {
  private last = 0;
  private from: number | undefined;

  constructor(
    private readonly client: Client,
    /** the task queues pipeline runs start on (the pipelines' own, and bulk jobs' runs' when it is another) */
    private readonly taskQueues: string[],
    private readonly store: Pick<ExecutionStore, 'unfinishedOfRuns'>,
    private readonly endRun: EndRun,
    private readonly log: Log,
    private readonly options: { everyMs: number; graceMs: number; callTimeoutMs: number; workflowType?: string },
  ) {}

  /** One pass, unless the last was under `everyMs` ago; returns how many records it ended. */
  async sweepOnce(now = Date.now()): Promise<number> {
    if (now - this.last < this.options.everyMs) return 0;
    this.last = now;
    this.from ??= now - FIRST_PASS_LOOKBACK_MS;
    const from = this.from;
    const to = now - this.options.graceMs;
    if (to <= from) return 0;
    const query =
      `WorkflowType = ${literal(this.options.workflowType ?? 'pipelineWorkflow')} AND (${this.taskQueues.map((queue) => `TaskQueue = ${literal(queue)}`).join(' OR ')})` +
      ` AND ExecutionStatus IN ('Terminated', 'Canceled', 'TimedOut')` +
      ` AND CloseTime > '${new Date(from).toISOString()}' AND CloseTime <= '${new Date(to).toISOString()}'`;
    let ended = 0;
    let complete = true;
    let pageToken: Uint8Array | undefined;
    do {
      const page = await this.listPage(query, pageToken);
      if (!page) return ended; // Temporal did not answer: the next pass lists the same window again
      pageToken = page.nextPageToken;
      const closed = page.runs.flatMap((run) => {
        const ids = idsOfWorkflowId(run.workflowId);
        return ids ? [{ ...ids, runId: run.runId, ending: run.ending }] : [];
      });
      for (const run of await this.store.unfinishedOfRuns(closed)) {
        const outcome = await this.end(run);
        if (outcome === 'ended') ended++;
        // Not ended by this pass (no answer, or the record moved to another step meanwhile): listed again next pass.
        if (outcome === 'unanswered' || outcome === 'moved') complete = false;
      }
    } while (pageToken && pageToken.length > 0);
    // Every run of the window seen and ended: the next window starts a little before this one ended.
    if (complete) this.from = Math.max(from, to - WINDOW_OVERLAP_MS);
    return ended;
  }

  /** Describes the run once more, then ends its record; 'unanswered' leaves it for the next pass. */
  private async end(run: EndedRun): Promise<'ended' | 'moved' | 'gone' | 'unanswered'> {
    const workflowId = workflowIdFor(run.tenantId, run.executionId);
    let state: RunEnding | 'gone';
    try {
      const description = await withCallDeadline(this.client, this.options.callTimeoutMs, () =>
        this.client.workflow.getHandle(workflowId, run.runId).describe(),
      );
      // Listed a moment before it was deleted (a run deleted is gone, not stopped: its record stalls, and ordinary replay resumes it).
      state = ENDING_NAMES[description.status.name] ?? 'gone';
    } catch (err) {
      if ((err as Error).name === 'WorkflowNotFoundError') return 'gone';
      this.log.warn({ event: 'execution_run_watch_unanswered', tenantId: run.tenantId, executionId: run.executionId, error: errorLine(err) });
      return 'unanswered';
    }
    if (state === 'gone') return 'gone';
    const terminatedBy = state === 'TERMINATED' ? await this.terminatedBy(workflowId, run.runId) : undefined;
    let outcome: 'ended' | 'moved';
    try {
      outcome = await this.endRun({ ...run, ending: state, ...(terminatedBy ? { terminatedBy } : {}) });
    } catch (err) {
      this.log.warn({ event: 'execution_run_watch_unanswered', tenantId: run.tenantId, executionId: run.executionId, error: errorLine(err) });
      return 'unanswered';
    }
    if (outcome === 'ended')
      this.log.warn({
        event: 'execution_run_ended_in_temporal',
        tenantId: run.tenantId,
        executionId: run.executionId,
        runId: run.runId,
        ending: state,
        stepIndex: run.stepIndex,
      });
    return outcome;
  }

  /**
   * Who terminated the run and why, from its close event (one event read): what the operator who
   * finds the record FAILED asks first. Undefined when it cannot be read; the record is ended anyway.
   */
  private async terminatedBy(workflowId: string, runId: string): Promise<{ identity: string; reason: string } | undefined> {
    try {
      const response = await withCallDeadline(this.client, this.options.callTimeoutMs, () =>
        this.client.workflowService.getWorkflowExecutionHistory({
          namespace: this.client.options.namespace,
          execution: { workflowId, runId },
          historyEventFilterType: CLOSE_EVENT,
        }),
      );
      const attributes = response.history?.events?.at(-1)?.workflowExecutionTerminatedEventAttributes;
      if (!attributes) return undefined;
      return { identity: printable(attributes.identity ?? '', 100), reason: printable(attributes.reason ?? '', 200) };
    } catch {
      return undefined;
    }
  }

  /** One page of the query, under its own deadline; undefined when Temporal did not answer. */
  private async listPage(query: string, nextPageToken: Uint8Array | undefined) {
    try {
      const response = await withCallDeadline(this.client, this.options.callTimeoutMs, () =>
        this.client.workflowService.listWorkflowExecutions({ namespace: this.client.options.namespace, query, pageSize: PAGE_SIZE, nextPageToken }),
      );
      const runs = (response.executions ?? []).flatMap((info) => {
        const ending = ENDINGS[Number(info.status)];
        const workflowId = info.execution?.workflowId;
        const runId = info.execution?.runId;
        return ending && workflowId && runId ? [{ workflowId, runId, ending }] : [];
      });
      return { runs, nextPageToken: response.nextPageToken ?? undefined };
    } catch (err) {
      this.log.warn({ event: 'execution_run_watch_unanswered', error: errorLine(err) });
      return undefined;
    }
  }
}
