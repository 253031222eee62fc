/**
 * A step activity resolves its operator by (pipeline, pinned version, step name). A
 * pinned version this worker dropped ends the execution FAILED / non_retryable with
 * PIPELINE_STEP_GONE (with its DLQ envelope naming the version); a pinned version newer
 * than any this worker has is a retry that commits nothing.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/engine-activities';
import { loadConfig } from '../../src/config/config';
import { createLog } from '../../src/log';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { PipelineRegistry } from '../../src/pipeline/registry';
import { DlqStore } from '../../src/store/dlq-store';
import { EffectStore } from '../../src/store/effect-store';
import { ExecutionStore } from '../../src/store/execution-store';
import type { StepRequest } from '../../src/workflows/types';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

/** An activity environment whose SDK logger keeps quiet about the failures these tests cause on purpose (a WARN with a stack each, read as a failure in CI output). */
const environment = () => new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const calls: string[] = [];
const op = (label: string) => () => {
  calls.push(label);
  return { ran: label };
};
const v1 = definePipeline({ name: 'p', steps: [localStep('a', op('a@v1')), localStep('gone', op('gone@v1'))] });
const v2 = definePipeline({ name: 'p', version: 2, steps: [localStep('a', op('a@v2')), localStep('b', op('b@v2'))] });

async function pinnedExecution(store: ExecutionStore, executionId: string, pipelineVersion: number) {
  await store.create(
    {
      tenantId: 't',
      executionId,
      executionKey: null,
      pipeline: 'p',
      pipelineVersion,
      definitionFingerprint: v1.fingerprint,
      workflowId: `w-${executionId}`,
      stepCount: 2,
      input: { x: 1 },
      correlationId: null,
      resourceType: null,
      resourceName: null,
    },
    {},
    { owner: 'test', ms: 1000 },
  );
}

/**
 * Step 0 of the execution committed by a worker that has version 1, as a rolling deploy
 * leaves it: the record stands RUNNING at step 1 for the next worker to take. The operator
 * it ran is forgotten, so `calls` holds only what the test's own worker runs.
 */
async function stepZeroCommittedUnderV1(store: ExecutionStore, executionId: string) {
  const olderWorker = createActivities({
    store,
    effects: new EffectStore(database.db),
    registry: new PipelineRegistry(loadConfig({}, { 'pipeline.auth.tokens': [] }), [v1]),
    log: createLog({ level: 'silent' }),
  });
  expect(await environment().run(olderWorker.runStep, request(executionId, { stepIndex: 0, stepName: 'a' }))).toEqual({
    output: { ran: 'a@v1' },
  });
  expect(await store.get('t', executionId)).toMatchObject({ status: 'RUNNING', currentStepIndex: 1, pipelineVersion: 1 });
  calls.length = 0;
}

const request = (executionId: string, overrides: Partial<StepRequest>): StepRequest => ({
  tenantId: 't',
  executionId,
  pipeline: 'p',
  correlationId: null,
  stepIndex: 1,
  stepName: 'gone',
  pipelineVersion: 1,
  transport: 'LOCAL',
  attempt: 1,
  firstOfRun: true,
  dispatchId: 'start',
  retry: { limit: 3, waitMs: 10, maxBackoffMs: 10, jitter: false },
  timeoutMs: 5000,
  input: { x: 1 },
  ...overrides,
});

describe('step resolution by pinned version and name', () => {
  const config = loadConfig({}, { 'pipeline.auth.tokens': [] });

  it('ends an execution whose pinned version was dropped with PIPELINE_STEP_GONE, running nothing', async () => {
    const store = new ExecutionStore(database.db);
    const activities = createActivities({
      store,
      effects: new EffectStore(database.db),
      registry: new PipelineRegistry(config, [v2]),
      log: createLog({ level: 'silent' }),
    });
    await pinnedExecution(store, 'gone-1', 1);
    await stepZeroCommittedUnderV1(store, 'gone-1');

    const failure = await environment()
      .run(activities.runStep, request('gone-1', {}))
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).nonRetryable).toBe(true);
    expect((failure as ApplicationFailure).details?.[0]).toMatchObject({
      status: 'FAILED',
      terminalReason: 'non_retryable',
      errorCode: 'PIPELINE_STEP_GONE',
      stepIndex: 1,
    });
    expect(await store.get('t', 'gone-1')).toMatchObject({
      status: 'FAILED',
      failedStepIndex: 1,
      terminalReason: 'non_retryable',
      lastErrorCode: 'PIPELINE_STEP_GONE',
    });
    // Not v2's step 1 (b), nor anything else.
    expect(calls).toEqual([]);
    const { entries } = await new DlqStore(database.db).list('t', { limit: 10 });
    expect(entries.map((entry) => entry.envelope)).toEqual([
      expect.objectContaining({ executionId: 'gone-1', errorCode: 'PIPELINE_STEP_GONE', pipeline: 'p', pipelineVersion: 1 }),
    ]);
  });

  it('leaves a step of a version newer than this worker knows to another worker, committing nothing', async () => {
    const store = new ExecutionStore(database.db);
    const activities = createActivities({
      store,
      effects: new EffectStore(database.db),
      registry: new PipelineRegistry(config, [v1]),
      log: createLog({ level: 'silent' }),
    });
    await pinnedExecution(store, 'behind-1', 2);
    const before = await store.get('t', 'behind-1');

    const failure = await environment()
      .run(activities.runStep, request('behind-1', { stepIndex: 0, stepName: 'a', pipelineVersion: 2 }))
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).nonRetryable).toBe(false);
    expect(await store.get('t', 'behind-1')).toEqual(before);
    expect(calls).toEqual([]);
  });

  it("runs the pinned version's operator by name while a newer version is registered", async () => {
    const store = new ExecutionStore(database.db);
    const activities = createActivities({
      store,
      effects: new EffectStore(database.db),
      registry: new PipelineRegistry(config, [v1, v2]),
      log: createLog({ level: 'silent' }),
    });
    await pinnedExecution(store, 'pinned-1', 1);
    await stepZeroCommittedUnderV1(store, 'pinned-1');
    const result = await environment().run(activities.runStep, request('pinned-1', {}));
    expect(result).toEqual({ output: { ran: 'gone@v1' } });
    expect(calls).toEqual(['gone@v1']);
    expect(await store.get('t', 'pinned-1')).toMatchObject({ status: 'SUCCEEDED', pipelineVersion: 1 });
  });
});
