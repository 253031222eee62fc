/**
 * The runStep activity alone, in Temporal's MockActivityEnvironment (no server, no
 * workflow), against the real store on Postgres. Each test makes its own execution and
 * counts operator invocations: the committed attempt a Temporal retry resumes with, a
 * duplicate run, a redelivery after the commit landed, a retained Command effect that
 * ordinary replay must not redispatch, the retry budget's end, a step Temporal cancels (its
 * run cancelled, timed out or gone), which commits nothing, and a fast-path step delivered again
 * at Temporal attempt 1 after its worker died (its retry's attempt kept, committed steps not re-run).
 */
import { ApplicationFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { ActivityCancellationDetails } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, type EngineActivities } from '../../src/activities/engine-activities';
import { loadConfig } from '../../src/config/config';
import { workflowIdFor } from '../../src/ids';
import { createLog } from '../../src/log';
import { definePipeline, localStep, NonRetryableException, type StepContext } from '../../src/pipeline/define';
import { PipelineRegistry } from '../../src/pipeline/registry';
import { DispatchStore } from '../../src/store/dispatch-store';
import { DlqStore } from '../../src/store/dlq-store';
import { EffectStore } from '../../src/store/effect-store';
import { ExecutionStore } from '../../src/store/execution-store';
import { FailureTypes, type StepRequest, type StepResult } from '../../src/workflows/types';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { writers } from '../helpers/writers';

let database: TestDatabase;
let store: ExecutionStore;
let effects: EffectStore;
let activities: EngineActivities;
/** Operator invocations by execution id: the attempts it was called with. */
const invoked: Record<string, number[]> = {};
/** Execution ids whose operator fails (retryably) on these attempts. */
const failOn: Record<string, number[]> = {};

function operator(input: unknown, ctx: StepContext) {
  (invoked[ctx.executionId] ??= []).push(ctx.attempt);
  if (failOn[ctx.executionId]?.includes(ctx.attempt)) throw new Error(`downstream busy on attempt ${ctx.attempt}`);
  return { echoed: input, attempt: ctx.attempt };
}

const pipelines = [
  definePipeline({
    name: 'plain',
    steps: [localStep('work', operator), localStep('next', (input: unknown) => input)],
    retry: { limit: 2, waitMs: 10, maxBackoffMs: 20 },
  }),
  definePipeline({ name: 'charge', steps: [localStep('charge', operator, { command: true })], retry: { limit: 2, waitMs: 10, maxBackoffMs: 20 } }),
  // Its second step refuses its first attempt for good (an execution to re-drive) and succeeds on any other.
  definePipeline({
    name: 'refusing',
    steps: [
      localStep('first', (input: unknown) => input),
      localStep('refuse', (input: unknown, ctx: StepContext) => {
        (invoked[ctx.executionId] ??= []).push(ctx.attempt);
        if (ctx.attempt === 1) throw new NonRetryableException('refused on attempt 1', 'TEST_FATAL');
        return { settled: ctx.attempt };
      }),
    ],
    retry: { limit: 2, waitMs: 10, maxBackoffMs: 20 },
  }),
  // Three steps of one operator, delivered as the fast path delivers them (a local activity each).
  definePipeline({
    name: 'fast',
    fastPath: true,
    steps: [localStep('one', operator), localStep('two', operator), localStep('three', operator)],
    retry: { limit: 2, waitMs: 10, maxBackoffMs: 20 },
  }),
  // Its operator runs until the activity is cancelled, then fails as an operator that honours ctx.signal does.
  definePipeline({
    name: 'waiting',
    steps: [
      localStep('wait', async (_input: unknown, ctx: StepContext) => {
        (invoked[ctx.executionId] ??= []).push(ctx.attempt);
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        throw new Error('stopped: the activity was cancelled');
      }),
    ],
    retry: { limit: 2, waitMs: 10, maxBackoffMs: 20 },
  }),
];

beforeAll(async () => {
  database = await createTestDatabase();
  store = new ExecutionStore(database.db);
  effects = new EffectStore(database.db);
  const registry = new PipelineRegistry(loadConfig({}, {}), pipelines);
  activities = createActivities({ store, effects, registry, log: createLog({ level: 'silent' }) });
});

afterAll(async () => {
  await database?.drop();
});

let next = 0;
/** A fresh QUEUED execution of `pipeline` and the request of its first step. */
async function execution(pipeline: string): Promise<StepRequest> {
  const executionId = `rs-${++next}`;
  const record = await store.create(
    {
      tenantId: 't',
      executionId,
      executionKey: null,
      pipeline,
      workflowId: workflowIdFor('t', executionId),
      stepCount: pipelines.find((definition) => definition.name === pipeline)!.steps.length,
      input: { n: next },
      correlationId: null,
      resourceType: null,
      resourceName: null,
    },
    {},
    { owner: 'run-step-test', ms: 60_000 },
  );
  if (!record) throw new Error('execution not created');
  const retry = { limit: 2, waitMs: 10, maxBackoffMs: 20, jitter: false };
  return {
    tenantId: 't',
    executionId,
    pipeline,
    correlationId: null,
    stepIndex: 0,
    attempt: 1,
    firstOfRun: true,
    dispatchId: 'start',
    retry,
    timeoutMs: 5000,
    input: { n: next },
  };
}

/** An activity environment as Temporal would make it for a delivery: `attempt` is Temporal's own try count. */
function environment(req: { tenantId: string; executionId: string }, options: { attempt?: number; runId?: string } = {}) {
  return new MockActivityEnvironment(
    { attempt: options.attempt ?? 1, workflowExecution: { workflowId: workflowIdFor(req.tenantId, req.executionId), runId: options.runId ?? 'run-1' } },
    // These tests fail activities on purpose; the SDK's WARN line with a stack per failure says nothing here.
    { logger: new DefaultLogger('ERROR') },
  );
}

/** One delivery of the step's activity. */
function deliver(req: StepRequest, options: { attempt?: number; runId?: string } = {}) {
  return environment(req, options).run(activities.runStep, req);
}

async function rejection(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('the default activity (a step under its own activity type)', () => {
  const under = (activityType: string, req: StepRequest) =>
    new MockActivityEnvironment(
      { activityType, workflowExecution: { workflowId: workflowIdFor(req.tenantId, req.executionId), runId: 'run-1' } },
      { logger: new DefaultLogger('ERROR') },
    ).run(activities.default, req);

  it('runs the step when the type is `<pipeline>:<step>` of its request, and refuses any other type without invoking it', async () => {
    const req = { ...(await execution('plain')), stepName: 'work' };
    for (const type of ['plain:next', 'charge:work', 'cleanup']) {
      const refused = await rejection(under(type, req));
      expect(refused).toMatchObject({ type: 'NotFoundError', nonRetryable: false });
      expect(refused.message).toContain(`activity type ${type} is not registered`);
    }
    expect(invoked[req.executionId]).toBeUndefined();
    expect(await under('plain:work', req)).toEqual({ output: { echoed: { n: next }, attempt: 1 } });
    expect(invoked[req.executionId]).toEqual([1]);
  });
});

describe('runStep', () => {
  it("marks the record RUNNING on a run's first step and commits the output as the next segment input", async () => {
    const req = await execution('plain');
    expect(await deliver(req)).toEqual({ output: { echoed: { n: next }, attempt: 1 } });
    expect(await store.get('t', req.executionId)).toMatchObject({
      status: 'RUNNING',
      runId: 'run-1',
      currentStepIndex: 1,
      attempt: 1,
      segmentInput: { echoed: { n: next }, attempt: 1 },
    });
    expect(invoked[req.executionId]).toEqual([1]);
  });

  it('commits the retry intent before asking Temporal to retry, and the retry runs as the committed attempt', async () => {
    const req = await execution('plain');
    failOn[req.executionId] = [1];
    const retry = await rejection(deliver(req));
    expect(retry.type).toBe(FailureTypes.retryable);
    expect(retry.nextRetryDelay).toBeDefined();
    expect(await store.get('t', req.executionId)).toMatchObject({ currentStepIndex: 0, attempt: 2, lastErrorCode: 'OPERATOR_ERROR' });
    // Temporal redelivers the same request (attempt 1 as the workflow knows it); the activity resumes from the store.
    expect(await deliver(req, { attempt: 2 })).toEqual({ output: { echoed: { n: next }, attempt: 2 } });
    expect(invoked[req.executionId]).toEqual([1, 2]);
  });

  it('ends a second run of the same dispatch as a duplicate without invoking the operator', async () => {
    const req = await execution('plain');
    await store.begin({ tenantId: 't', executionId: req.executionId, runId: 'run-owner', dispatchId: 'start' });
    const duplicate = await rejection(deliver(req, { runId: 'run-late' }));
    expect(duplicate.type).toBe(FailureTypes.duplicateRun);
    expect(duplicate.nonRetryable).toBe(true);
    expect(invoked[req.executionId]).toBeUndefined();
    expect(await store.get('t', req.executionId)).toMatchObject({ runId: 'run-owner', currentStepIndex: 0 });
  });

  it.each([
    ['its run is being cancelled (Request Cancellation)', 'CANCELLED', { cancelRequested: true }],
    ['Temporal timed the attempt out', 'TIMED_OUT', { timedOut: true }],
    ['its run is gone', 'NOT_FOUND', { notFound: true }],
  ] as const)(
    'commits nothing when the step is cancelled because %s: no retry intent, no FAILED, the record as the step found it',
    async (_why, reason, details) => {
      const req = await execution('waiting');
      const env = environment(req);
      const delivery = env.run(activities.runStep, req).then(
        () => 'completed',
        (err: unknown) => err,
      );
      // Cancel once the operator is running (the record is RUNNING under run-1 by then).
      while (!invoked[req.executionId]) await new Promise((resolve) => setTimeout(resolve, 5));
      const before = await store.get('t', req.executionId);
      env.cancel(reason, new ActivityCancellationDetails(details));
      const outcome = await delivery;
      // The cancellation itself, not an ApplicationFailure that would tell the workflow how to go on.
      expect(outcome).not.toBe('completed');
      expect(outcome).not.toBeInstanceOf(ApplicationFailure);
      expect(invoked[req.executionId]).toEqual([1]);
      expect(await store.get('t', req.executionId)).toEqual(before);
      expect(before).toMatchObject({ status: 'RUNNING', runId: 'run-1', currentStepIndex: 0, attempt: 1, lastErrorCode: null });
    },
  );

  it('answers a redelivery whose commit already landed with the committed output, without invoking again', async () => {
    const req = await execution('plain');
    const first = await deliver(req);
    const version = (await store.get('t', req.executionId))!.version;
    expect(await deliver(req, { attempt: 2 })).toEqual(first);
    expect(invoked[req.executionId]).toEqual([1]);
    expect((await store.get('t', req.executionId))!.version).toBe(version);
  });

  it('never redispatches a retained FAILED_RETRYABLE Command effect on ordinary replay: FAILED with COMMAND_EFFECT_NOT_REDISPATCHABLE', async () => {
    const req = await execution('charge');
    failOn[req.executionId] = [1];
    await rejection(deliver(req));
    expect(await effects.get('t', req.executionId, 0)).toMatchObject({ status: 'FAILED_RETRYABLE', attempt: 1 });
    const replay = await rejection(deliver({ ...req, attempt: 2, firstOfRun: false, dispatchId: undefined, redriveIntent: 'ORDINARY' }));
    expect(replay.type).toBe(FailureTypes.terminal);
    expect(replay.details?.[0]).toMatchObject({ status: 'FAILED', terminalReason: 'non_retryable', errorCode: 'COMMAND_EFFECT_NOT_REDISPATCHABLE' });
    expect(invoked[req.executionId]).toEqual([1]);
    const { entries } = await new DlqStore(database.db).list('t', { limit: 10 });
    expect(entries.filter((entry) => entry.envelope.executionId === req.executionId).map((entry) => entry.envelope.errorCode)).toEqual([
      'COMMAND_EFFECT_NOT_REDISPATCHABLE',
    ]);
  });

  it("ends the execution retry_exhausted when the run's budget is used up: limit 2 = three invocations", async () => {
    const req = await execution('plain');
    failOn[req.executionId] = [1, 2, 3];
    for (const attempt of [1, 2]) expect((await rejection(deliver(req, { attempt }))).type).toBe(FailureTypes.retryable);
    const exhausted = await rejection(deliver(req, { attempt: 3 }));
    expect(exhausted.details?.[0]).toMatchObject({
      status: 'FAILED',
      terminalReason: 'retry_exhausted',
      errorCode: 'OPERATOR_ERROR',
      transitionKey: `${req.executionId}:0:3`,
    });
    expect(invoked[req.executionId]).toEqual([1, 2, 3]);
    expect(await store.get('t', req.executionId)).toMatchObject({ status: 'FAILED', failedStepIndex: 0, attempt: 3 });
  });
});

describe('a fast-path delivery run again after its worker died (a local activity, at Temporal attempt 1 again)', () => {
  /** The request of step `index` as the workflow makes it on the fast path, after the run's first step. */
  const later = (first: StepRequest, index: number, input: unknown, mayHaveRun: boolean): StepRequest => ({
    ...first,
    stepIndex: index,
    attempt: 1,
    firstOfRun: false,
    dispatchId: undefined,
    input,
    fastPath: true,
    ...(mayHaveRun ? { mayHaveRun: true as const } : {}),
  });
  /** A delivery that completes: the step's result. */
  const completed = (req: StepRequest) => environment(req).run<[StepRequest], StepResult, EngineActivities['runStep']>(activities.runStep, req);

  it('runs a step the dead worker left in its retry as the committed attempt, not attempt 1 again', async () => {
    const first: StepRequest = { ...(await execution('fast')), fastPath: true };
    const { output } = await completed(first);
    failOn[first.executionId] = [1];
    // The dead worker: step 1's attempt 1 failed, its retry intent (attempt 2) committed.
    expect((await rejection(deliver(later(first, 1, output, false)))).type).toBe(FailureTypes.retryable);
    expect(await store.get('t', first.executionId)).toMatchObject({ currentStepIndex: 1, attempt: 2 });
    // The worker that replays its workflow task runs step 1 for real at Temporal attempt 1: it reads the record first.
    expect(await deliver(later(first, 1, output, true), { attempt: 1 })).toEqual({ output: { echoed: output, attempt: 2 } });
    expect(invoked[first.executionId]).toEqual([1, 1, 2]);
    expect(await store.get('t', first.executionId)).toMatchObject({ currentStepIndex: 2, attempt: 1 });
  });

  it('answers a step the dead worker already committed, and the ones after it, with the step to carry on from, invoking nothing', async () => {
    const first: StepRequest = { ...(await execution('fast')), fastPath: true };
    // The dead worker ran steps 0 and 1 in one workflow task and committed both; their markers were never written.
    const zero = await completed(first);
    const one = await completed(later(first, 1, zero.output, false));
    const before = (await store.get('t', first.executionId))!;
    expect(before).toMatchObject({ status: 'RUNNING', currentStepIndex: 2, attempt: 1 });
    // The new worker's copy runs step 0 again (the run's first step always reads the record).
    expect(await deliver(first)).toEqual({ output: one.output, nextStepIndex: 2 });
    // A step before the record's, marked as one that may have run, reads it too.
    expect(await deliver(later(first, 1, zero.output, true))).toEqual({ output: one.output, nextStepIndex: 2 });
    expect(invoked[first.executionId]).toEqual([1, 1]);
    expect((await store.get('t', first.executionId))!.version).toBe(before.version);
    // The run carries on at step 2, which runs once.
    expect(await deliver(later(first, 2, one.output, true))).toEqual({ output: { echoed: one.output, attempt: 1 } });
    expect(invoked[first.executionId]).toEqual([1, 1, 1]);
    expect(await store.get('t', first.executionId)).toMatchObject({ status: 'SUCCEEDED', version: before.version + 1 });
  });
});

describe('a run superseded by a re-drive', () => {
  /**
   * The run's second step commits FAILED, and its worker dies before Temporal hears of it.
   * An operator re-drives the execution; the re-drive's run cannot start while this one is
   * open, and Temporal delivers the step to it again.
   */
  async function failedThenRedriven() {
    const req = await execution('refusing');
    await deliver(req);
    const second: StepRequest = { ...req, stepIndex: 1, stepName: 'refuse', firstOfRun: undefined, dispatchId: undefined, input: { n: next } };
    expect((await rejection(deliver(second))).type).toBe(FailureTypes.terminal);
    expect(await store.get('t', req.executionId)).toMatchObject({ status: 'FAILED', failedStepIndex: 1, runId: 'run-1' });
    await writers(database.db).redriven('t', req.executionId, { redriveId: `redrive-${req.executionId}` });
    const queued = (await store.get('t', req.executionId))!;
    expect(queued).toMatchObject({ status: 'QUEUED', currentStepIndex: 1, attempt: 2, runId: null });
    return { second, queued };
  }

  it('ends with the failure it committed when Temporal delivers its step again, without invoking the operator or committing', async () => {
    const { second, queued } = await failedThenRedriven();
    const again = await rejection(deliver(second, { attempt: 2 }));
    expect(again).toMatchObject({ type: FailureTypes.terminal, nonRetryable: true });
    expect(again.details?.[0]).toEqual({
      status: 'FAILED',
      terminalReason: 'non_retryable',
      errorCode: 'TEST_FATAL',
      stepIndex: 1,
      transitionKey: `${second.executionId}:1:1`,
    });
    expect(again.message).toContain('re-driven since: this delivery ran no step and committed nothing');
    expect(invoked[second.executionId]).toEqual([1]);
    expect(await store.get('t', second.executionId)).toEqual(queued);

    // The same when it was the run's first step (a re-drive's run that failed, re-driven again),
    // even once the sweeper has started the re-drive's run and marked its dispatch row STARTED.
    await new DispatchStore(database.db).markStarted({
      tenantId: 't',
      executionId: second.executionId,
      dispatchId: `redrive-${second.executionId}`,
      runId: 'run-2',
    });
    expect((await rejection(deliver({ ...second, firstOfRun: true, dispatchId: 'start' }, { attempt: 2 }))).details?.[0]).toMatchObject({
      errorCode: 'TEST_FATAL',
      transitionKey: `${second.executionId}:1:1`,
    });
    expect(invoked[second.executionId]).toEqual([1]);

    // The re-drive's own run takes the record and runs the step once, as the re-drive's attempt.
    const redriveRun = { ...second, attempt: 2, firstOfRun: true, dispatchId: `redrive-${second.executionId}`, redriveIntent: 'FAILED' as const };
    expect(await deliver(redriveRun, { runId: 'run-2' })).toEqual({ output: { settled: 2 } });
    expect(invoked[second.executionId]).toEqual([1, 2]);
    expect(await store.get('t', second.executionId)).toMatchObject({ status: 'SUCCEEDED', runId: 'run-2' });
  });

  it('commits nothing when Temporal gives its step up: the abandoned step reports what the run committed', async () => {
    const { second, queued } = await failedThenRedriven();
    const abandon = { tenantId: 't', executionId: second.executionId, stepIndex: 1, stepName: 'refuse', transport: 'LOCAL' as const, reason: 'worker lost' };
    expect(await environment(second).run(activities.abandonStep, abandon)).toMatchObject({
      status: 'FAILED',
      errorCode: 'TEST_FATAL',
      transitionKey: `${second.executionId}:1:1`,
    });
    // A run that never owned the record (a Reset's copy) is not the execution's run either.
    expect(await environment(second, { runId: 'run-reset' }).run(activities.abandonStep, abandon)).toMatchObject({
      status: 'FAILED',
      errorCode: 'RUN_DOES_NOT_OWN_RECORD',
    });
    expect(await store.get('t', second.executionId)).toEqual(queued);
    expect(invoked[second.executionId]).toEqual([1]);
  });
});

describe('a superseded run, the other ways it can have committed', () => {
  /** The run-1 record at step 1 of 'refusing' (its step 0 done), and step 1's request. */
  async function atSecondStep() {
    const req = await execution('refusing');
    await deliver(req);
    const second: StepRequest = { ...req, stepIndex: 1, stepName: 'refuse', firstOfRun: undefined, dispatchId: undefined, input: { n: next } };
    return { req, second };
  }

  it('ends as it parked when its REMOTE_OUTCOME_UNKNOWN was never reported and an operator re-drove it with NOT_APPLIED', async () => {
    const { req, second } = await atSecondStep();
    // The run's step 1 parked the execution (its remote call's deadline passed); its worker died before Temporal heard of it.
    const transitionKey = `${req.executionId}:1:1`;
    const remoteCall = {
      transitionKey,
      protocol: 'REST' as const,
      target: 'http://worker',
      startedAt: new Date().toISOString(),
      deadlineMs: 2000,
      elapsedMs: 2001,
    };
    const parked = await store.commitOutcomeUnknown({
      tenantId: 't',
      executionId: req.executionId,
      stepIndex: 1,
      attempt: 1,
      runId: 'run-1',
      errorCode: 'REMOTE_OUTCOME_UNKNOWN',
      errorMessage: 'deadline passed',
      remoteCall,
    });
    expect(parked).toMatchObject({ committed: true, status: 'REMOTE_OUTCOME_UNKNOWN' });
    await writers(database.db).redriven('t', req.executionId, { redriveId: `redrive-${req.executionId}` });
    const queued = (await store.get('t', req.executionId))!;
    expect(queued).toMatchObject({ status: 'QUEUED', currentStepIndex: 1, attempt: 2, runId: null });

    const again = await rejection(deliver(second, { attempt: 2 }));
    expect(again).toMatchObject({ type: FailureTypes.terminal, nonRetryable: true });
    expect(again.details?.[0]).toEqual({
      status: 'REMOTE_OUTCOME_UNKNOWN',
      terminalReason: null,
      errorCode: 'REMOTE_OUTCOME_UNKNOWN',
      stepIndex: 1,
      transitionKey,
    });
    expect(invoked[req.executionId]).toBeUndefined();
    expect(await store.get('t', req.executionId)).toEqual(queued);
  });

  it('refuses a run of a record from before run ids, re-driven meanwhile, without running or committing anything', async () => {
    const { req, second } = await atSecondStep();
    // A record written before run ids were kept: RUNNING with none, its attempt log too. The fence lets its run commit (here, FAILED), logged with no run.
    await database.db.query(`UPDATE execution_record SET run_id = NULL WHERE tenant_id = 't' AND execution_id = $1`, [req.executionId]);
    await database.db.query(`UPDATE execution_attempt SET run_id = NULL WHERE tenant_id = 't' AND execution_id = $1`, [req.executionId]);
    expect((await rejection(deliver(second))).type).toBe(FailureTypes.terminal);
    expect(await store.get('t', req.executionId)).toMatchObject({ status: 'FAILED', failedStepIndex: 1, runId: null });
    await writers(database.db).redriven('t', req.executionId, { redriveId: `redrive-${req.executionId}` });
    const queued = (await store.get('t', req.executionId))!;

    // Its outcome is not the run's own in the attempt log, so it cannot end as committed: it is refused, and runs nothing.
    const again = await rejection(deliver(second, { attempt: 2 }));
    expect(again).toMatchObject({ type: FailureTypes.duplicateRun, nonRetryable: true });
    // Its message says what it most likely is, not only "a Reset".
    expect(again.message).toContain('a run that no longer owns this execution (a run from before run ids were kept, superseded since');
    expect(invoked[req.executionId]).toEqual([1]);
    expect(await store.get('t', req.executionId)).toEqual(queued);
  });
});

describe('commits fenced by run', () => {
  it('a run that does not own the record cannot move it, even on the path that reads no record before the operator', async () => {
    const req = await execution('plain');
    await deliver(req);
    const owned = (await store.get('t', req.executionId))!;
    expect(owned).toMatchObject({ status: 'RUNNING', currentStepIndex: 1, attempt: 1, runId: 'run-1' });
    // Temporal's first try of a later step skips the read (the run took the record on its first step);
    // a stray run there (nothing known makes one: this is the fence for what nobody has thought of) commits nothing.
    const second: StepRequest = { ...req, stepIndex: 1, stepName: 'next', firstOfRun: undefined, dispatchId: undefined, input: { from: 'stray' } };
    const refused = await rejection(deliver(second, { runId: 'run-stray' }));
    expect(refused).toMatchObject({ type: FailureTypes.duplicateRun, nonRetryable: true });
    expect(refused.message).toContain("this run's step outcome was not committed");
    // Every commit of this execution names its run: nothing suggests a run from before run ids.
    expect(refused.message).not.toContain('before run ids');
    expect(await store.get('t', req.executionId)).toEqual(owned);

    // The record's own run then commits its step as if nothing had happened.
    expect(await deliver({ ...second, input: { from: 'owner' } })).toEqual({ output: { from: 'owner' } });
    expect(await store.get('t', req.executionId)).toMatchObject({ status: 'SUCCEEDED', segmentInput: { from: 'owner' }, runId: 'run-1' });
  });
});

describe('a run whose first step Temporal gave up before it took the record', () => {
  const dispatchRow = async (executionId: string) =>
    (
      await database.db.query<{ status: string; run_id: string | null; lease_owner: string | null }>(
        `SELECT status, run_id, lease_owner FROM execution_dispatch WHERE tenant_id = 't' AND execution_id = $1`,
        [executionId],
      )
    ).rows[0];
  const abandonFirst = (req: StepRequest, dispatchId?: string) => ({
    tenantId: 't',
    executionId: req.executionId,
    stepIndex: 0,
    stepName: 'work',
    transport: 'LOCAL' as const,
    reason: 'ApplicationFailure: pipeline "plain" version 2 is not registered on this worker yet (registered: 1)',
    ...(dispatchId ? { dispatchId } : {}),
  });

  it('ends the record it was dispatched for FAILED, to the DLQ, instead of leaving it QUEUED with no run', async () => {
    const req = await execution('plain');
    // Every delivery met a worker behind a rollout: none reached the record.
    expect(await environment(req).run(activities.abandonStep, abandonFirst(req, 'start'))).toEqual({
      status: 'FAILED',
      terminalReason: 'retry_exhausted',
      errorCode: 'STEP_ABANDONED',
      stepIndex: 0,
      transitionKey: `${req.executionId}:0:1`,
    });
    expect(await store.get('t', req.executionId)).toMatchObject({
      status: 'FAILED',
      failedStepIndex: 0,
      terminalReason: 'retry_exhausted',
      lastErrorCode: 'STEP_ABANDONED',
      runId: 'run-1',
    });
    const { entries } = await new DlqStore(database.db).list('t', { errorCode: 'STEP_ABANDONED', limit: 100 });
    expect(entries.filter((entry) => entry.envelope.executionId === req.executionId).map((entry) => entry.envelope.errorMessage)).toEqual([
      abandonFirst(req).reason,
    ]);
    expect(entries.find((entry) => entry.envelope.executionId === req.executionId)?.envelope.retriesObserved).toBe(0);
    expect(invoked[req.executionId]).toBeUndefined();
    // The run took its dispatch as its first step would have: the sweeper starts no second run of it.
    expect(await dispatchRow(req.executionId)).toEqual({ status: 'STARTED', run_id: 'run-1', lease_owner: null });
    // What the run committed is its own: a second report of the same run answers the same.
    expect(await environment(req).run(activities.abandonStep, abandonFirst(req, 'start'))).toMatchObject({ errorCode: 'STEP_ABANDONED' });
  });

  it("commits nothing on a record QUEUED for another dispatch or another run's, nor when the step was not the run's first", async () => {
    const req = await execution('plain');
    const queued = await store.get('t', req.executionId);
    expect(await environment(req, { runId: 'run-old' }).run(activities.abandonStep, abandonFirst(req, 'an-earlier-redrive'))).toMatchObject({
      errorCode: 'RUN_DOES_NOT_OWN_RECORD',
    });
    expect(await environment(req).run(activities.abandonStep, abandonFirst(req))).toMatchObject({ errorCode: 'RUN_DOES_NOT_OWN_RECORD' });
    // The dispatch started by run-1 (the dispatcher marked it): a Reset's copy of that dispatch is not its run.
    await new DispatchStore(database.db).markStarted({ tenantId: 't', executionId: req.executionId, dispatchId: 'start', runId: 'run-1' });
    expect(await environment(req, { runId: 'run-reset' }).run(activities.abandonStep, abandonFirst(req, 'start'))).toMatchObject({
      errorCode: 'RUN_DOES_NOT_OWN_RECORD',
    });
    expect(await store.get('t', req.executionId)).toEqual(queued);
    // The dispatch's own run then takes it as usual.
    expect(await deliver(req)).toEqual({ output: { echoed: req.input, attempt: 1 } });
  });
});
