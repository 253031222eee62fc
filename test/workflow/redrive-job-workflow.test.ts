/**
 * The bulk re-drive job's workflow alone, on Temporal's time-skipping test server (the pause
 * test on the dev server: withDevServer says why) with mocked activities over an in-memory job
 * (the store's part): the canary that passes and
 * the one that halts, haltOn, pause / resume / abort by signal, activities that keep
 * failing (bounded: the job ends FAILED with the reason), and continue-as-new forced through
 * a lower history limit in the workflow's input, with the canary and counts carried over.
 */
import { randomBytes } from 'node:crypto';
import { ApplicationFailure, CancelledFailure, Client, Connection, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Context } from '@temporalio/activity';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { requestOwnWorkflowCancel, type JobTickState, type RedriveJobActivities } from '../../src/activities/redrive-job-activities';
import { WORKFLOWS_PATH } from '../../src/temporal/worker';
import { DEFAULT_HALT_ON } from '../../src/contract/requests';
import type { HaltOn } from '../../src/workflows/redrive-job-policy';
import { REDRIVE_JOB_FAILED, redriveJobWake, redriveJobWorkflow, type RedriveJobInput } from '../../src/workflows/redrive-job-workflow';
import { createTimeSkippingEnv } from '../helpers/time-skipping';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let queue = 0;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  bundle = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
}, scaled(180_000));

afterAll(async () => {
  await env?.teardown();
});

type Outcome = 'SUCCEEDED' | 'FAILED' | 'REMOTE_OUTCOME_UNKNOWN';

/**
 * The job as the store holds it. Items are admitted in order, each at most once; an
 * admitted item's run ends with `outcome(i)` after `runTicks` more reads of the state.
 */
class FakeJob {
  status: JobTickState['status'] = 'RUNNING';
  haltReason: string | null = null;
  failureReason: string | null = null;
  readonly admitted: { item: number; readsLeft: number; outcome: Outcome }[] = [];
  /** every activity call: the job's status when it came, and (ticks) when it answered */
  readonly calls: { activity: string; max?: number; status: string; runId: string; answered?: string }[] = [];
  /** admissions made while an earlier item of the canary was still running */
  admittedPastRunningCanary = 0;
  /** hook run on every activity call, before it answers (a test's operator) */
  onCall: (job: FakeJob, activity: string) => void = () => undefined;

  constructor(
    readonly total: number,
    readonly options: {
      canary?: number;
      ratePerSecond?: number;
      batchSize?: number;
      haltOn?: HaltOn;
      runTicks?: number;
      outcome?: (i: number) => Outcome;
    } = {},
  ) {}

  private age() {
    for (const item of this.admitted) if (item.readsLeft > 0) item.readsLeft--;
  }

  state(): JobTickState {
    const finished = (o: Outcome) => this.admitted.filter((a) => a.readsLeft === 0 && a.outcome === o).length;
    return {
      status: this.status,
      batchSize: this.options.batchSize ?? 50,
      ratePerSecond: this.options.ratePerSecond ?? 50,
      canary: this.options.canary ?? null,
      haltOn: this.options.haltOn ?? DEFAULT_HALT_ON,
      processed: this.admitted.length,
      remaining: this.total - this.admitted.length,
      admitted: this.admitted.length,
      running: this.admitted.filter((a) => a.readsLeft > 0).length,
      succeeded: finished('SUCCEEDED'),
      failedAgain: finished('FAILED'),
      remoteOutcomeUnknown: finished('REMOTE_OUTCOME_UNKNOWN'),
      unavailable: false,
    };
  }

  private record(activity: string, max?: number) {
    this.onCall(this, activity);
    this.calls.push({ activity, max, status: this.status, runId: Context.current().info.workflowExecution?.runId ?? '' });
  }

  activities(): RedriveJobActivities {
    return {
      redriveJobTick: async (req) => {
        this.record('tick', req.max);
        this.age();
        let room = this.state().batchSize - this.state().running;
        for (let n = 0; n < req.max && this.status === 'RUNNING' && this.admitted.length < this.total && room > 0; n++, room--) {
          const canary = this.options.canary ?? 0;
          if (this.admitted.length >= canary && this.admitted.slice(0, canary).some((a) => a.readsLeft > 0)) this.admittedPastRunningCanary++;
          const item = this.admitted.length;
          this.admitted.push({ item, readsLeft: this.options.runTicks ?? 0, outcome: this.options.outcome?.(item) ?? 'SUCCEEDED' });
        }
        this.calls.at(-1)!.answered = this.status;
        return this.state();
      },
      redriveJobHalt: async (req) => {
        this.record('halt');
        if (this.status === 'RUNNING') [this.status, this.haltReason] = ['PAUSED', req.reason];
        return this.state();
      },
      redriveJobFinish: async () => {
        this.record('finish');
        if (this.status === 'RUNNING') this.status = 'COMPLETED';
        return this.state();
      },
      redriveJobCancelled: async () => {
        this.record('cancelled');
        if (this.status === 'RUNNING' || this.status === 'PAUSED') this.status = 'ABORTED';
        return this.state();
      },
      // The real one: Temporal is asked to cancel the calling run.
      redriveJobRequestCancel: async (req) => {
        this.record('request-cancel');
        await requestOwnWorkflowCancel(req);
      },
      redriveJobFail: async (req) => {
        this.record('fail');
        if (this.status === 'RUNNING' || this.status === 'PAUSED') [this.status, this.failureReason] = ['FAILED', req.reason];
      },
    };
  }
}

/** Where a job's workflow runs: the time-skipping test server (default) or the shared dev server. */
interface Server {
  client: Client;
  nativeConnection: NativeConnection;
  /** prefix of workflow ids and task queues (the dev server is shared with other files) */
  prefix: string;
}

/** Starts the job's workflow on a fresh task queue and worker over `activities`; `body` runs while the worker does. */
async function withJob<T>(
  input: Omit<RedriveJobInput, 'tenantId' | 'jobId'>,
  activities: RedriveJobActivities,
  body: (handle: WorkflowHandle<typeof redriveJobWorkflow>) => Promise<T>,
  server: Server = { client: env.client, nativeConnection: env.nativeConnection, prefix: '' },
): Promise<T> {
  const n = ++queue;
  const taskQueue = `${server.prefix}job-wf-${n}`;
  const worker = await Worker.create({ connection: server.nativeConnection, taskQueue, workflowBundle: bundle, activities });
  const handle = await server.client.workflow.start(redriveJobWorkflow, {
    args: [{ tenantId: 't', jobId: `${server.prefix}job-${n}`, ...input }],
    workflowId: `redrive-job/t/${server.prefix}job-${n}`,
    taskQueue,
  });
  try {
    return await worker.runUntil(body(handle));
  } finally {
    // The dev server outlives this file: a run a failed test left open must not linger there.
    if (server.prefix) await handle.terminate('test over').catch(() => undefined);
  }
}

/**
 * The shared Temporal dev server, for a test that needs real time and signals racing timers.
 * The time-skipping test server refuses a workflow task completion that cancels a timer which
 * fired meanwhile ("invalid history builder state for action") and then never times the task out
 * nor sends another (temporalio/sdk-java#3088, #2606): the run hangs with its history ending
 * TimerStarted, WorkflowExecutionSignaled, WorkflowTaskScheduled, WorkflowTaskStarted. A real
 * server drops the buffered fire and records TimerCanceled.
 */
async function withDevServer<T>(body: (server: Server) => Promise<T>): Promise<T> {
  const address = inject('temporalAddress');
  const nativeConnection = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  try {
    return await body({ client: new Client({ connection }), nativeConnection, prefix: `${randomBytes(4).toString('hex')}-` });
  } finally {
    await connection.close();
    await nativeConnection.close();
  }
}

/** An aborted job's workflow ends cancelled (the list shows Canceled, not Completed), after asking Temporal once. */
async function endsCancelled(handle: WorkflowHandle<typeof redriveJobWorkflow>, job: FakeJob) {
  const error = await handle.result().then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  expect((await handle.describe()).status.name).toBe('CANCELLED');
  expect(job.calls.filter((c) => c.activity === 'request-cancel')).toHaveLength(1);
  expect(job.status).toBe('ABORTED');
}

const outcomeOf = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  );

describe('redriveJobWorkflow (time-skipping, mocked activities)', () => {
  it('a canary that passes: admits its items, waits for every one of their runs to end, then the rest; completes once', async () => {
    const job = new FakeJob(12, { canary: 3, runTicks: 3 });
    const { value } = await withJob({}, job.activities(), (handle) => outcomeOf(handle.result()));
    expect(value).toEqual({ status: 'COMPLETED', processed: 12 });
    // Nothing past the canary while one of its runs was still running.
    expect(job.admittedPastRunningCanary).toBe(0);
    expect(job.admitted.map((a) => a.item)).toEqual([...Array(12).keys()]);
    expect(job.calls.filter((c) => c.activity === 'finish')).toHaveLength(1);
    expect(job.calls.filter((c) => c.activity === 'halt')).toEqual([]);
  });

  it('a canary whose items fail again halts the job with the reason, admits nothing more, and ends on abort', async () => {
    const job = new FakeJob(20, { canary: 2, outcome: () => 'FAILED' });
    // The operator aborts once the halted job has been read paused twice.
    job.onCall = (j, activity) => {
      if (activity === 'tick' && j.status === 'PAUSED' && j.calls.filter((c) => c.status === 'PAUSED').length >= 2) j.status = 'ABORTED';
    };
    await withJob({}, job.activities(), (handle) => endsCancelled(handle, job));
    expect(job.haltReason).toMatch(/^canary of 2: 2 of 2 re-driven items failed again \(100%/);
    expect(job.admitted).toHaveLength(2);
    expect(job.calls.filter((c) => c.activity === 'halt')).toHaveLength(1);
  });

  it('haltOn: halts when the failed-again share passes the threshold, and on a REMOTE_OUTCOME_UNKNOWN park', async () => {
    // 0.1/s: the time-skipping server's clock also runs with real time, so at 1/s a tick held up
    // by a loaded machine would find many items due at once, before any verdict could halt.
    const share = new FakeJob(40, {
      ratePerSecond: 0.1,
      haltOn: { failedAgainShare: 0.5, minFinished: 4, remoteOutcomeUnknown: true },
      outcome: (i) => (i % 2 ? 'FAILED' : 'SUCCEEDED'),
    });
    share.onCall = (j) => {
      if (j.status === 'PAUSED') j.status = 'ABORTED';
    };
    await withJob({}, share.activities(), (handle) => endsCancelled(handle, share));
    expect(share.haltReason).toMatch(/^\d+ of \d+ re-driven items failed again \(50%, haltOn.failedAgainShare 50%\)$/);
    expect(share.admitted.length).toBeLessThan(10);

    const parked = new FakeJob(40, { ratePerSecond: 0.1, outcome: (i) => (i === 2 ? 'REMOTE_OUTCOME_UNKNOWN' : 'SUCCEEDED') });
    parked.onCall = (j) => {
      if (j.status === 'PAUSED') j.status = 'ABORTED';
    };
    await withJob({}, parked.activities(), (handle) => endsCancelled(handle, parked));
    expect(parked.haltReason).toBe('1 re-driven item(s) parked as REMOTE_OUTCOME_UNKNOWN (haltOn.remoteOutcomeUnknown)');
    expect(parked.admitted.length).toBeLessThan(10);
  });

  it('pause, resume and abort by signal: a paused job admits nothing, the wake-up ends its paused wait at once, abort ends the workflow', async () => {
    // Real time here: a paused job sleeps a minute between reads, and each wake-up must end that wait
    // early; each wake-up also cancels a pacing timer that may fire at the same moment, which the
    // time-skipping server cannot take (withDevServer). So this test runs on the dev server.
    await withDevServer(pauseResumeAbort);
  });

  async function pauseResumeAbort(server: Server) {
    const job = new FakeJob(1000, { ratePerSecond: 5 });
    const isPausedTimer = (e: { timerStartedEventAttributes?: { startToFireTimeout?: { seconds?: unknown } | null } | null }) =>
      String(e.timerStartedEventAttributes?.startToFireTimeout?.seconds) === '60';
    const history = await withJob(
      {},
      job.activities(),
      async (handle) => {
        const pausedWaits = async () => ((await handle.fetchHistory()).events ?? []).filter(isPausedTimer).length;
        // On a timeout, say what the workflow and the job were doing (a CI failure is read from its output alone).
        const waitFor = (check: () => Promise<boolean>, what: string) =>
          until(check, 60_000, what).catch(async (err: Error) => {
            const events = ((await handle.fetchHistory().catch(() => ({ events: [] }))).events ?? []).map((e) => String(e.eventType));
            const describe = await handle.describe().catch((e: Error) => ({ status: { name: e.message } }));
            err.message += `; workflow ${describe.status.name}, job ${job.status} with ${job.admitted.length} admitted, last calls ${JSON.stringify(job.calls.slice(-4))}, last events ${events.slice(-12).join(',')} (${events.length} in all)`;
            throw err;
          });
        // The operator's move: the store says `status`, then the workflow is woken.
        const operator = async (status: typeof job.status) => {
          job.status = status;
          await handle.signal(redriveJobWake);
        };
        await waitFor(async () => job.admitted.length >= 2, 'two admissions');
        await operator('PAUSED');
        await waitFor(async () => (await pausedWaits()) >= 1, 'the workflow to wait paused');
        const atPause = job.admitted.length;
        await operator('RUNNING');
        await waitFor(async () => job.admitted.length >= atPause + 2, 'two admissions after resume');
        await operator('PAUSED');
        await waitFor(async () => (await pausedWaits()) >= 2, 'the workflow to wait paused again');
        const atAbort = job.admitted.length;
        await operator('ABORTED');
        await endsCancelled(handle, job);
        expect(job.admitted).toHaveLength(atAbort);
        return handle.fetchHistory();
      },
      server,
    );
    // Each wake-up ended the minute-long paused wait early: its timer was cancelled, never fired.
    const events = history.events ?? [];
    const pausedTimerIds = new Set(events.filter(isPausedTimer).map((e) => e.timerStartedEventAttributes!.timerId));
    expect(pausedTimerIds.size).toBe(2);
    const cancelled = new Set(events.filter((e) => e.timerCanceledEventAttributes).map((e) => e.timerCanceledEventAttributes!.timerId));
    expect([...pausedTimerIds].every((id) => cancelled.has(id))).toBe(true);
    expect(events.filter((e) => e.timerFiredEventAttributes && pausedTimerIds.has(e.timerFiredEventAttributes.timerId!))).toEqual([]);
    // Once it has read PAUSED, the workflow asks for nothing until it reads RUNNING again.
    const ticks = job.calls.filter((c) => c.activity === 'tick');
    const afterPausedRead = ticks.filter((c, i) => i > 0 && ticks[i - 1].answered === 'PAUSED');
    expect(afterPausedRead.length).toBeGreaterThanOrEqual(2);
    expect(afterPausedRead.filter((c) => c.status === 'PAUSED').every((c) => c.max === 0)).toBe(true);
  }

  it('Request Cancellation in Temporal: the tick in flight ends first, then the job is aborted in the store, and the workflow ends cancelled', async () => {
    const job = new FakeJob(1000, { ratePerSecond: 5 });
    let release: () => void = () => undefined;
    const activities = job.activities();
    const inner = activities.redriveJobTick;
    let held = false;
    // Once two items are in, the next tick is held open until the test lets it go: the cancellation arrives mid-tick.
    activities.redriveJobTick = async (req) => {
      if (job.admitted.length >= 2 && !held && req.max > 0) {
        held = true;
        await new Promise<void>((resolve) => (release = resolve));
      }
      return inner(req);
    };
    const { error } = await withJob({}, activities, async (handle) => {
      let abortedMidTick: number;
      try {
        await until(async () => held, 60_000, 'a tick held open');
        await handle.cancel();
        // The workflow has seen the cancellation once it asked for the tick's; with a tick still held, it must schedule nothing else.
        const events = async () => (await handle.fetchHistory()).events ?? [];
        await until(async () => (await events()).some((e) => e.activityTaskCancelRequestedEventAttributes), 60_000, 'the tick to be asked to cancel');
        abortedMidTick = (await events()).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'redriveJobCancelled').length;
      } finally {
        release();
      }
      // The workflow waited for the tick: nothing was aborted while it was in flight.
      expect(abortedMidTick).toBe(0);
      return outcomeOf(handle.result());
    });
    expect(String((error as Error)?.cause ?? error)).toMatch(/cancel/i);
    expect(job.status).toBe('ABORTED');
    const cancelledAt = job.calls.findIndex((c) => c.activity === 'cancelled');
    expect(cancelledAt).toBeGreaterThan(0);
    // The held tick answered before the abort, and no tick came after it.
    expect(job.calls.slice(cancelledAt + 1)).toEqual([]);
    expect(job.calls[cancelledAt - 1]).toMatchObject({ activity: 'tick', answered: 'RUNNING' });
  });

  it('a tick that keeps failing: retried a bounded number of times, then the job is marked FAILED and the workflow fails with the reason', async () => {
    const job = new FakeJob(10);
    let ticks = 0;
    const activities = {
      ...job.activities(),
      redriveJobTick: async () => {
        ticks++;
        throw new Error('relation "redrive_job" does not exist');
      },
    };
    const { error } = await withJob({ limits: { activityAttempts: 4 } }, activities, (handle) => outcomeOf(handle.result()));
    expect(ticks).toBe(4);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure.type).toBe(REDRIVE_JOB_FAILED);
    expect(failure.message).toBe(`the job's tick activity failed 4 times; last: relation "redrive_job" does not exist`);
    expect(job.status).toBe('FAILED');
    expect(job.failureReason).toBe(failure.message);
    expect(job.calls.filter((c) => c.activity === 'fail')).toHaveLength(1);
  });

  it('continues as new past the history limit in its input, carrying the canary, the pace and the limits; every item once', async () => {
    const job = new FakeJob(60, { canary: 2, ratePerSecond: 2, runTicks: 1 });
    const { value, history } = await withJob({ limits: { historyLength: 60 } }, job.activities(), async (handle) => ({
      ...(await outcomeOf(handle.result())),
      history: await handle.fetchHistory(),
    }));
    expect(value).toEqual({ status: 'COMPLETED', processed: 60 });
    expect(job.admitted.map((a) => a.item)).toEqual([...Array(60).keys()]);
    const runs = [...new Set(job.calls.map((c) => c.runId))];
    expect(runs.length).toBeGreaterThanOrEqual(3);
    // The last run started from the carried state: canary done, the limits kept.
    const started = history.events![0].workflowExecutionStartedEventAttributes!;
    const input = JSON.parse(Buffer.from(started.input!.payloads![0].data!).toString()) as RedriveJobInput;
    expect(input.carry?.canaryDone).toBe(true);
    expect(input.limits).toEqual({ historyLength: 60 });
    expect(history.events!.length).toBeLessThan(60 + 40);
    expect(job.calls.filter((c) => c.activity === 'finish')).toHaveLength(1);
  });
});
