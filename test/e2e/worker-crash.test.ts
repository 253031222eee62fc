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

describe.each([
  { path: 'regular activities', fastPath: false },
  { path: 'the fast path (local activities)', fastPath: true },
])('worker crash while a step runs, $path', ({ fastPath }) => {
  let engine: TestEngine;
  const workers: ChildProcess[] = [];

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
      [crashyShape],
      { 'pipeline.orchestrator.worker.heartbeat-timeout': '1s', 'pipeline.orchestrator.fast-path': fastPath },
      { worker: false },
    );
    await engine.service.db.query('CREATE TABLE test_invocation (id serial PRIMARY KEY, transition_key text NOT NULL, pid integer NOT NULL)');
  });
  afterAll(async () => {
    for (const child of workers) if (child.exitCode === null) child.kill('SIGKILL');
    await engine?.stop();
  });

  it('redelivers the step with the same transition identity to a new worker, without a double commit', async () => {
    const first = await startWorker();
    await engine.start('acme', { pipeline: 'crashy', executionId: 'crash-1' });

    await until(async () => (await engine.service.db.query('SELECT 1 FROM test_invocation')).rowCount > 0, 30_000, 'the step to start');
    first.kill('SIGKILL');
    await once(first, 'exit');
    const before = await engine.service.store.get('acme', 'crash-1');
    expect(before).toMatchObject({ status: 'RUNNING', currentStepIndex: 1, attempt: 1 });

    const second = await startWorker();
    const record = await engine.waitFor('acme', 'crash-1', ['SUCCEEDED', 'FAILED'], 45_000);
    expect(record.status).toBe('SUCCEEDED');

    const invocations = await engine.service.db.query<{ transition_key: string; pid: number }>('SELECT transition_key, pid FROM test_invocation ORDER BY id');
    expect(invocations.rows.map((row) => row.transition_key)).toEqual(['crash-1:1:1', 'crash-1:1:1']);
    expect(invocations.rows.map((row) => row.pid)).toEqual([first.pid, second.pid]);
    // created + RUNNING + three step commits: the redelivery committed nothing twice.
    expect(record.version).toBe(5);
    expect(record.segmentInput).toEqual({ step: 'slow', pid: second.pid });

    // The path the steps took, from the history: three activities, or three local-activity markers.
    const history = await engine.service.client.workflow.getHandle(record.workflowId).fetchHistory();
    const scheduled = history.events!.filter((event) => event.activityTaskScheduledEventAttributes).length;
    const markers = history.events!.filter((event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity').length;
    expect({ scheduled, markers }).toEqual(fastPath ? { scheduled: 0, markers: 3 } : { scheduled: 3, markers: 0 });
  });
});
