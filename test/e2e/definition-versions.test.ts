/**
 * A deploy changes the `orders` pipeline: version 2 inserts `audit` before `settle`
 * (index 3 is `settle` in version 1 and `audit` in version 2). Executions admitted under
 * version 1 keep running version 1's operators, found by name, in a new worker process
 * that registers both versions; a re-drive resumes the right step under version 1 while it
 * is registered; once it is not, the re-drive answers 409 PIPELINE_DEFINITION_CHANGED, and
 * with `resumeUnderCurrentVersion` resumes version 2's `settle`. Operator invocations are
 * counted in `test_invocation`.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { startWorkerProcess } from '../helpers/worker-process';
import { ordersV1, ordersV2 } from '../fixtures/versioned-pipelines';
import { scaled } from '../helpers/time-scale';

// The API side plans runs from the shapes; the worker processes run the operators.
const shape = () => () => null;
const WORKER = 'test/fixtures/versioned-worker-process.ts';

let engine: TestEngine;
const workers: ChildProcess[] = [];

const startWorker = async (env: Record<string, string>) => {
  const child = await startWorkerProcess(WORKER, {
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    DATABASE_URL: engine.database.url,
    TASK_QUEUE: engine.taskQueue,
    ...env,
  });
  workers.push(child);
  return child;
};

async function invocations(executionId: string) {
  // The run, Temporal's attempt and the time say, when a count is wrong, which delivery ran the operator again.
  const result = await engine.service.db.query<{
    version: number;
    step: string;
    transition_key: string;
    pid: number;
    run_id: string;
    activity_attempt: number;
    at: Date;
  }>('SELECT version, step, transition_key, pid, run_id, activity_attempt, at FROM test_invocation WHERE execution_id = $1 ORDER BY id', [executionId]);
  return result.rows;
}

const redrive = (executionId: string, body: Record<string, unknown>, query = '') =>
  engine.request('POST', `/admin/tenants/acme/executions/${executionId}/redrive${query}`, { body: { reason: 'deploy test', allowFailed: true, ...body } });

beforeAll(async () => {
  engine = await startTestEngine([ordersV1(shape)], {}, { worker: false });
  // This engine runs no worker, so no sweeper either; a deployment's worker replicas sweep.
  // A re-drive sent while the previous run is still closing (its last workflow task waits
  // out the killed worker's task timeout) is left pending for the sweeper, so run one here.
  engine.service.dispatcher.startSweeper(500);
  await engine.service.db.query(
    'CREATE TABLE test_invocation (id serial PRIMARY KEY, execution_id text NOT NULL, version integer NOT NULL, step text NOT NULL, transition_key text NOT NULL, pid integer NOT NULL, run_id text, activity_attempt integer NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())',
  );
});
afterAll(async () => {
  for (const child of workers) if (child.exitCode === null) child.kill('SIGKILL');
  await engine?.stop();
});

describe('a deploy that inserts a step', () => {
  it('never makes a run or a re-drive execute the wrong step', { timeout: scaled(400_000) }, async () => {
    // Version 1 is deployed; settle is flaky in this worker process.
    const oldWorker = await startWorker({ VERSIONS: '1', FAIL_RETRYABLE: 'settle' });
    await engine.start('acme', { pipeline: 'orders', executionId: 'parked' });
    await engine.start('acme', { pipeline: 'orders', executionId: 'failed', input: { fatal: 'settle' } });
    await engine.start('acme', { pipeline: 'orders', executionId: 'failed-2', input: { fatal: 'settle' } });

    for (const id of ['failed', 'failed-2']) {
      expect(await engine.waitFor('acme', id, ['FAILED', 'SUCCEEDED'], 60_000)).toMatchObject({
        status: 'FAILED',
        failedStepIndex: 3,
        pipelineVersion: 1,
        stepCount: 4,
        lastErrorCode: 'TEST_FATAL',
      });
    }
    // The parked run committed a retry of settle (step 3) and waits in backoff.
    await until(
      async () => {
        const record = await engine.service.store.get('acme', 'parked');
        return record?.status === 'RUNNING' && record.currentStepIndex === 3 && record.attempt >= 2;
      },
      60_000,
      'the parked run to commit a retry of step 3',
    );

    // The deploy: a new worker process with both versions; the old process goes away.
    oldWorker.kill('SIGKILL');
    await once(oldWorker, 'exit');
    const newWorker = await startWorker({ VERSIONS: '1,2' });
    engine.service.registry.register(ordersV2(shape));

    const parked = await engine.waitFor('acme', 'parked', ['SUCCEEDED', 'FAILED'], 60_000);
    expect(parked).toMatchObject({ status: 'SUCCEEDED', pipelineVersion: 1, stepCount: 4, currentStepIndex: 4 });
    const parkedRuns = await invocations('parked');
    // Step 3 of the parked run was settle of version 1 every time, and the new worker ran it once, successfully.
    expect(parkedRuns.filter((row) => row.transition_key.startsWith('parked:3:')).every((row) => row.step === 'settle' && row.version === 1)).toBe(true);
    expect(parkedRuns.filter((row) => row.pid === newWorker.pid)).toEqual([expect.objectContaining({ version: 1, step: 'settle' })]);
    expect(parkedRuns.some((row) => row.step === 'audit' || row.version === 2)).toBe(false);
    expect(parked.segmentInput).toMatchObject({ trail: ['validate@v1', 'reserve@v1', 'charge@v1', 'settle@v1'] });

    // New executions use version 2.
    const fresh = await engine.start('acme', { pipeline: 'orders', executionId: 'fresh' });
    expect(fresh).toMatchObject({ pipelineVersion: 2, stepCount: 5 });
    expect((await engine.waitFor('acme', 'fresh', ['SUCCEEDED', 'FAILED'], 60_000)).segmentInput).toMatchObject({
      trail: ['validate@v2', 'reserve@v2', 'charge@v2', 'audit@v2', 'settle@v2'],
    });

    // Re-drive under version 1 while it is registered: settle of version 1, step 3, attempt 2.
    const failed = (await engine.service.store.get('acme', 'failed'))!;
    const accepted = await redrive('failed', { expectedVersion: failed.version });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toMatchObject({ resumeStepIndex: 3, pipelineVersion: 1 });
    expect(await engine.waitFor('acme', 'failed', ['SUCCEEDED', 'FAILED'], 60_000)).toMatchObject({ status: 'SUCCEEDED', pipelineVersion: 1, stepCount: 4 });
    const resumed = (await invocations('failed')).filter((row) => row.pid === newWorker.pid);
    expect(resumed).toEqual([expect.objectContaining({ version: 1, step: 'settle', transition_key: 'failed:3:2' })]);

    // Version 1 is unregistered: the re-drive is refused with the difference, and nothing changes.
    engine.service.registry.unregister('orders', 1);
    const before = (await engine.service.store.get('acme', 'failed-2'))!;
    const preview = await redrive('failed-2', { expectedVersion: before.version }, '?dryRun=true');
    expect(await preview.json()).toMatchObject({ admitted: false, status: 409, code: 'PIPELINE_DEFINITION_CHANGED' });
    const refused = await redrive('failed-2', { expectedVersion: before.version });
    expect(refused.status).toBe(409);
    expect(await refused.json()).toMatchObject({
      code: 'PIPELINE_DEFINITION_CHANGED',
      pinnedVersion: 1,
      currentVersion: 2,
      resumeStep: 'settle',
      diff: { appeared: ['audit'], vanished: [], moved: [{ step: 'settle', fromIndex: 3, toIndex: 4 }] },
    });
    expect(await engine.service.store.get('acme', 'failed-2')).toEqual(before);

    // The audited opt-in resumes the same-named step of version 2 (index 4).
    const optIn = await redrive('failed-2', { expectedVersion: before.version, resumeUnderCurrentVersion: true });
    expect(optIn.status).toBe(202);
    expect(await optIn.json()).toMatchObject({ resumeStepIndex: 4, pipelineVersion: 2 });
    // A generous bound (it only stops a hang): under load the opt-in run's first step waited past 60 s once.
    expect(await engine.waitFor('acme', 'failed-2', ['SUCCEEDED', 'FAILED'], 180_000)).toMatchObject({
      status: 'SUCCEEDED',
      pipelineVersion: 2,
      stepCount: 5,
      currentStepIndex: 5,
    });
    const moved = (await invocations('failed-2')).filter((row) => row.pid === newWorker.pid);
    expect(moved).toEqual([expect.objectContaining({ version: 2, step: 'settle', transition_key: 'failed-2:4:2' })]);
    const audit = await engine.service.db.query('SELECT from_pipeline_version, to_pipeline_version, request FROM redrive_audit WHERE execution_id = $1', [
      'failed-2',
    ]);
    expect(audit.rows).toEqual([
      expect.objectContaining({ from_pipeline_version: 1, to_pipeline_version: 2, request: expect.objectContaining({ resumeUnderCurrentVersion: true }) }),
    ]);

    // The record, the DLQ envelope and the history name the versions.
    const view = await (await engine.request('GET', '/admin/tenants/acme/executions/failed-2')).json();
    expect(view).toMatchObject({ pipelineVersion: 2, stepCount: 5 });
    const dlq = await (await engine.request('GET', '/admin/tenants/acme/dlq?errorCode=TEST_FATAL')).json();
    expect(dlq.items.find((item: { envelope: { executionId: string } }) => item.envelope.executionId === 'failed-2').envelope).toMatchObject({
      pipeline: 'orders',
      pipelineVersion: 1,
    });
    const story = await (await engine.request('GET', '/admin/tenants/acme/executions/failed-2/history')).json();
    expect(story.pipelineVersion).toBe(2);
    expect(story.attempts.filter((row: { step: string }) => row.step === 'settle')).toEqual([
      expect.objectContaining({ stepIndex: 3, pipelineVersion: 1, outcome: 'FAILED' }),
      expect.objectContaining({ stepIndex: 4, pipelineVersion: 2, outcome: 'SUCCEEDED' }),
    ]);
    expect(story.redrives).toEqual([expect.objectContaining({ fromPipelineVersion: 1, toPipelineVersion: 2, resumeStepIndex: 4 })]);
  });
});
