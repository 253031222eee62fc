/**
 * Crash matrix, row 1: a worker process is killed (SIGKILL) while a step runs. A new
 * worker process gets the step redelivered with the same transition identity (the
 * committed attempt did not move), the execution completes, and no transition was
 * committed twice. Run twice: with each step a regular activity, and on the fast path (each
 * step a local activity, the three in one workflow task: the dead worker's workflow task times
 * out and the new worker replays it, re-reading the record at every step).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { startWorkerProcess } from '../helpers/worker-process';

// The API side only needs the pipeline's shape to plan the run; the worker processes run it.
const crashyShape = definePipeline({ name: 'crashy', steps: [localStep('a', () => null), localStep('slow', () => null), localStep('c', () => null)] });
const crashyRetryShape = definePipeline({
  name: 'crashy-retry',
  steps: [localStep('a', () => null), localStep('flaky', () => null), localStep('c', () => null)],
});

describe.each([
  { path: 'regular activities', fastPath: false },
  { path: 'the fast path (local activities)', fastPath: true },
])('worker crash while a step runs, $path', ({ fastPath }) => {
  let engine: TestEngine;
  const workers: ChildProcess[] = [];

  /** Each test's workers are its own: the previous test's survivor would take its steps (and dodge its kill). */
  async function stopWorkers(): Promise<void> {
    for (const child of workers) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
  }

  async function startWorker(): Promise<ChildProcess> {
    const child = await startWorkerProcess('test/fixtures/worker-process.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: engine.database.url,
      TASK_QUEUE: engine.taskQueue,
    });
    workers.push(child);
    return child;
  }

  beforeAll(async () => {
    engine = await startTestEngine(
      [crashyShape, crashyRetryShape],
      {
        'pipeline.orchestrator.worker.heartbeat-timeout': '1s',
        'pipeline.orchestrator.fast-path': fastPath,
        'pipeline.defaults.retry-wait-ms': 50,
        'pipeline.defaults.max-backoff': 200,
      },
      { worker: false },
    );
    await engine.service.db.query('CREATE TABLE test_invocation (id serial PRIMARY KEY, transition_key text NOT NULL, pid integer NOT NULL)');
  });
  // Both blocks share the test's dev server: each its own execution ids.
  const id = (name: string) => `${name}-${fastPath ? 'fast' : 'plain'}`;
  const invocationsOf = async (executionId: string) =>
    (
      await engine.service.db.query<{ transition_key: string; pid: number }>(
        'SELECT transition_key, pid FROM test_invocation WHERE transition_key LIKE $1 ORDER BY id',
        [`${executionId}:%`],
      )
    ).rows;
  afterAll(async () => {
    for (const child of workers) if (child.exitCode === null) child.kill('SIGKILL');
    await engine?.stop();
  });

  it('redelivers the step with the same transition identity to a new worker, without a double commit', async () => {
    const executionId = id('crash');
    await stopWorkers();
    const first = await startWorker();
    await engine.start('acme', { pipeline: 'crashy', executionId });

    await until(async () => (await invocationsOf(executionId)).length > 0, 30_000, 'the step to start');
    first.kill('SIGKILL');
    await once(first, 'exit');
    const before = await engine.service.store.get('acme', executionId);
    expect(before).toMatchObject({ status: 'RUNNING', currentStepIndex: 1, attempt: 1 });

    const second = await startWorker();
    const record = await engine.waitFor('acme', executionId, ['SUCCEEDED', 'FAILED'], 45_000);
    expect(record.status).toBe('SUCCEEDED');

    const invocations = await invocationsOf(executionId);
    expect(invocations.map((row) => row.transition_key)).toEqual([`${executionId}:1:1`, `${executionId}:1:1`]);
    expect(invocations.map((row) => row.pid)).toEqual([first.pid, second.pid]);
    // created + RUNNING + three step commits: the redelivery committed nothing twice.
    expect(record.version).toBe(5);
    expect(record.segmentInput).toEqual({ step: 'slow', pid: second.pid });

    // The path the steps took, from the history: three activities, or three local-activity markers.
    // (the record is SUCCEEDED at the last step's commit; the markers are written when its workflow task completes)
    const handle = engine.service.client.workflow.getHandle(record.workflowId);
    await handle.result();
    const history = await handle.fetchHistory();
    const scheduled = history.events!.filter((event) => event.activityTaskScheduledEventAttributes).length;
    const markers = history.events!.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
    expect({ scheduled, markers }).toEqual(fastPath ? { scheduled: 0, markers: 3 } : { scheduled: 3, markers: 0 });
  });

  it('redelivers a retried step as its committed attempt after the worker died in the retry', async () => {
    const executionId = id('crash-retry');
    await stopWorkers();
    const first = await startWorker();
    await engine.start('acme', { pipeline: 'crashy-retry', executionId });

    // The first invocation failed (retry intent committed: attempt 2), the second is hanging in it.
    await until(async () => (await invocationsOf(executionId)).length === 2, 30_000, 'the retried step to start');
    first.kill('SIGKILL');
    await once(first, 'exit');
    expect(await engine.service.store.get('acme', executionId)).toMatchObject({ status: 'RUNNING', currentStepIndex: 1, attempt: 2 });

    const second = await startWorker();
    const record = await engine.waitFor('acme', executionId, ['SUCCEEDED', 'FAILED'], 45_000);
    expect(record.status).toBe('SUCCEEDED');
    // The new worker runs the committed attempt under its identity (on the fast path its workflow
    // task re-runs from the start, its local activity at Temporal attempt 1), never attempt 1 again.
    const invocations = await invocationsOf(executionId);
    expect(invocations.map((row) => row.transition_key)).toEqual([`${executionId}:1:1`, `${executionId}:1:2`, `${executionId}:1:2`]);
    expect(invocations.map((row) => row.pid)).toEqual([first.pid, first.pid, second.pid]);
    // created + RUNNING + step 0 + the retry intent + steps 1 and 2.
    expect(record.version).toBe(6);
  });
});
