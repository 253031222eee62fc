/**
 * The run-end watch's window and paging, against a fake Temporal client and store (the real
 * ones: test/e2e/temporal-ui-buttons.test.ts). A window moves on only after a pass saw every
 * page and ended every record it found; nothing it lists is lost to a failure.
 */
import type { Client } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { createLog } from '../log';
import { FIRST_PASS_LOOKBACK_MS, RunEndWatch, type EndedRun } from './run-end-watch';

const GRACE = 30_000;
const T0 = Date.parse('2026-11-28T12:00:00.000Z');

interface FakeRun {
  workflowId: string;
  runId: string;
  /** 5 = terminated, 4 = cancelled, 7 = timed out */
  status: number;
}

function fakeWatch(options: {
  pages: FakeRun[][];
  failPage?: number;
  describe?: (runId: string) => string | Error;
  moved?: Set<string>;
  taskQueues?: string[];
}) {
  const queries: string[] = [];
  const ended: EndedRun[] = [];
  let pageCalls = 0;
  const client = {
    options: { namespace: 'default' },
    connection: { withDeadline: (_: number, fn: () => unknown) => fn(), withAbortSignal: (_: AbortSignal, fn: () => unknown) => fn() },
    workflowService: {
      // A terminated run's close event: who and why (a newline in the reason, as a CLI user may type).
      async getWorkflowExecutionHistory() {
        return { history: { events: [{ workflowExecutionTerminatedEventAttributes: { identity: 'ops@host', reason: 'bad\ninput' } }] } };
      },
      async listWorkflowExecutions(request: { query: string; nextPageToken?: Uint8Array }) {
        const call = pageCalls++;
        if (call === options.failPage) throw new Error('visibility unavailable');
        const index = request.nextPageToken ? request.nextPageToken[0] : 0;
        if (index === 0) queries.push(request.query);
        const next = index + 1 < options.pages.length ? new Uint8Array([index + 1]) : new Uint8Array();
        return {
          executions: options.pages[index].map((run) => ({ execution: { workflowId: run.workflowId, runId: run.runId }, status: run.status })),
          nextPageToken: next,
        };
      },
    },
    workflow: {
      getHandle: (_workflowId: string, runId: string) => ({
        async describe() {
          const answer = options.describe?.(runId) ?? 'TERMINATED';
          if (answer instanceof Error) throw answer;
          return { status: { name: answer } };
        },
      }),
    },
  } as unknown as Client;
  const store = {
    // Every listed run still owns its record, at step 2.
    async unfinishedOfRuns<R>(runs: R[]) {
      return runs.map((run) => ({ ...run, stepIndex: 2 }));
    },
  };
  const watch = new RunEndWatch(
    client,
    options.taskQueues ?? ['orders'],
    store,
    async (run) => {
      if (options.moved?.has(run.runId)) return 'moved';
      ended.push(run);
      return 'ended';
    },
    createLog({ level: 'silent' }),
    { everyMs: 0, graceMs: GRACE, callTimeoutMs: 1000 },
  );
  return { watch, queries, ended, resetPages: () => (pageCalls = 0) };
}

const bounds = (query: string) => [...query.matchAll(/CloseTime [<>]=? '([^']+)'/g)].map((m) => m[1]);
const run = (n: number, status = 5): FakeRun => ({ workflowId: `pipeline/acme/order-${n}`, runId: `run-${n}`, status });

describe('run-end watch', () => {
  it('looks back a day on its first pass, then moves on to five minutes before the last window ended', async () => {
    const { watch, queries } = fakeWatch({ pages: [[]] });
    await watch.sweepOnce(T0);
    await watch.sweepOnce(T0 + 60_000);
    expect(bounds(queries[0])).toEqual([new Date(T0 - FIRST_PASS_LOOKBACK_MS).toISOString(), new Date(T0 - GRACE).toISOString()]);
    expect(bounds(queries[1])).toEqual([new Date(T0 - GRACE - 300_000).toISOString(), new Date(T0 + 60_000 - GRACE).toISOString()]);
    expect(queries[0]).toContain("WorkflowType = 'pipelineWorkflow' AND (TaskQueue = 'orders') AND ExecutionStatus IN ('Terminated', 'Canceled', 'TimedOut')");
  });

  it('follows every page, names each ending, and passes over workflows that are not pipeline runs', async () => {
    const describe = (runId: string) => ({ 'run-2': 'CANCELLED', 'run-3': 'TIMED_OUT' })[runId] ?? 'TERMINATED';
    const job = { workflowId: 'redrive-job/acme/j1', runId: 'job', status: 5 };
    const { watch, ended } = fakeWatch({ pages: [[run(1), run(2, 4)], [run(3, 7)], [job]], describe });
    expect(await watch.sweepOnce(T0)).toBe(3);
    expect(ended.map((r) => [r.executionId, r.runId, r.ending, r.stepIndex, r.terminatedBy])).toEqual([
      ['order-1', 'run-1', 'TERMINATED', 2, { identity: 'ops@host', reason: 'bad input' }],
      ['order-2', 'run-2', 'CANCELLED', 2, undefined],
      ['order-3', 'run-3', 'TIMED_OUT', 2, undefined],
    ]);
  });

  it('keeps its window when a page does not answer, and lists the same runs again next pass', async () => {
    const { watch, queries, ended } = fakeWatch({ pages: [[run(1)], [run(2)]], failPage: 1 });
    expect(await watch.sweepOnce(T0)).toBe(1);
    expect(await watch.sweepOnce(T0 + 60_000)).toBe(2);
    expect(bounds(queries[1])[0]).toBe(bounds(queries[0])[0]);
    expect(ended.map((r) => r.runId)).toEqual(['run-1', 'run-1', 'run-2']);
  });

  it('ends the rest of a window when one run is not described, but keeps the window for that run', async () => {
    let down = true;
    const { watch, queries, ended } = fakeWatch({
      pages: [[run(1), run(2)]],
      describe: (runId) => (runId === 'run-1' && down ? new Error('deadline') : 'TERMINATED'),
    });
    expect(await watch.sweepOnce(T0)).toBe(1);
    down = false;
    await watch.sweepOnce(T0 + 60_000);
    expect(bounds(queries[1])[0]).toBe(bounds(queries[0])[0]);
    expect(ended.map((r) => r.runId)).toEqual(['run-2', 'run-1', 'run-2']);
  });

  it('leaves a deleted run alone (gone, not stopped) and a record that moved for the next pass', async () => {
    const notFound = Object.assign(new Error('not found'), { name: 'WorkflowNotFoundError' });
    const gone = fakeWatch({ pages: [[run(1)]], describe: () => notFound });
    expect(await gone.watch.sweepOnce(T0)).toBe(0);
    await gone.watch.sweepOnce(T0 + 60_000);
    expect(bounds(gone.queries[1])[0]).not.toBe(bounds(gone.queries[0])[0]);

    const moved = fakeWatch({ pages: [[run(1)]], moved: new Set(['run-1']) });
    expect(await moved.watch.sweepOnce(T0)).toBe(0);
    await moved.watch.sweepOnce(T0 + 60_000);
    expect(bounds(moved.queries[1])[0]).toBe(bounds(moved.queries[0])[0]);
  });

  it('quotes the task queue in the query', async () => {
    const { watch, queries } = fakeWatch({ pages: [[]], taskQueues: ["it's\\queue"] });
    await watch.sweepOnce(T0);
    expect(queries[0]).toContain("TaskQueue = 'it\\'s\\\\queue'");
  });

  it("lists the bulk jobs' runs too when they have a task queue of their own", async () => {
    const { watch, queries } = fakeWatch({ pages: [[]], taskQueues: ['orders', 'orders-bulk'] });
    await watch.sweepOnce(T0);
    expect(queries[0]).toContain("AND (TaskQueue = 'orders' OR TaskQueue = 'orders-bulk') AND ExecutionStatus");
  });
});
