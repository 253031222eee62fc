/**
 * Crash matrix, "after state commit": a worker commits a step's terminal failure and is
 * SIGKILLed before Temporal hears of it, so the run stays open and Temporal will deliver the
 * step again. An operator re-drives the FAILED execution meanwhile. The re-drive's run cannot
 * start while the old one is open; the old run's redelivery must end that run as it
 * committed, run no operator and commit nothing, so the re-drive's run starts and runs the
 * step once. Operator invocations are counted per transition identity in `test_invocation`.
 * Run on both paths: regular activities, and the fast path (local activities, all four steps in
 * one workflow task: the new worker replays that task, whose first step finds the record re-driven).
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startWorkerProcess } from '../helpers/worker-process';
import { scaled } from '../helpers/time-scale';
import { ordersV1 } from '../fixtures/versioned-pipelines';

const shape = () => () => null;
describe.each([
  { path: 'regular activities', fastPath: false },
  { path: 'the fast path (local activities)', fastPath: true },
])('a worker killed after a FAILED commit, before Temporal hears of it, $path', ({ fastPath }) => {
  // Both blocks share the test's dev server: each its own workflow id.
  const id = fastPath ? 'lost-fast' : 'lost';
  let engine: TestEngine;
  const workers: ChildProcess[] = [];

  const startWorker = async (env: Record<string, string>) => {
    const child = await startWorkerProcess('test/fixtures/versioned-worker-process.ts', {
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      DATABASE_URL: engine.database.url,
      TASK_QUEUE: engine.taskQueue,
      VERSIONS: '1',
      ...env,
    });
    workers.push(child);
    return child;
  };

  beforeAll(async () => {
    // Each transition is counted exactly once, so a step's own heartbeats must never be late enough
    // to redeliver it on a loaded machine; the killed worker's step comes again after this timeout.
    engine = await startTestEngine(
      [ordersV1(shape)],
      { 'pipeline.orchestrator.worker.heartbeat-timeout': scaled(10_000), 'pipeline.orchestrator.fast-path': fastPath },
      { worker: false },
    );
    // No worker in this engine, so no sweeper: the re-drive waits for the old run to close, then the sweeper starts it.
    engine.service.dispatcher.startSweeper(500);
    await engine.service.db.query(
      'CREATE TABLE test_invocation (id serial PRIMARY KEY, execution_id text NOT NULL, version integer NOT NULL, step text NOT NULL, transition_key text NOT NULL, pid integer NOT NULL, run_id text, activity_attempt integer NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())',
    );
  });
  afterAll(async () => {
    for (const child of workers) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await engine?.stop();
  });

  it('ends the old run as it committed when its step comes again after a re-drive, and runs each transition once', { timeout: scaled(300_000) }, async () => {
    const dying = await startWorker({ DIE_AFTER_FAILED_COMMIT: '1' });
    await engine.start('acme', { pipeline: 'orders', executionId: id, input: { fatal: 'settle' } });
    await once(dying, 'exit');
    expect(dying.signalCode).toBe('SIGKILL');
    const failed = (await engine.service.store.get('acme', id))!;
    expect(failed).toMatchObject({ status: 'FAILED', failedStepIndex: 3, attempt: 1, lastErrorCode: 'TEST_FATAL' });

    // The old run is still open in Temporal: the re-drive is admitted and its start left to the sweeper.
    const accepted = await engine.request('POST', `/admin/tenants/acme/executions/${id}/redrive`, {
      body: { reason: 'after a worker crash', allowFailed: true, expectedVersion: failed.version },
    });
    expect(accepted.status).toBe(202);
    expect(await accepted.json()).toMatchObject({ resumeStepIndex: 3, dispatch: 'pending' });

    const worker = await startWorker({});
    expect(await engine.waitFor('acme', id, ['SUCCEEDED'], 120_000)).toMatchObject({ status: 'SUCCEEDED', attempt: 2, redriveCount: 1 });

    const settle = await engine.service.db.query<{ transition_key: string; pid: number; run_id: string; activity_attempt: number }>(
      `SELECT transition_key, pid, run_id, activity_attempt FROM test_invocation WHERE execution_id = $1 AND step = 'settle' ORDER BY id`,
      [id],
    );
    const [oldRun, redriveRun] = await engine.runsOf('acme', id, 2);
    // Once per transition identity: attempt 1 in the old run on the dying worker, attempt 2 in the re-drive's run.
    expect(settle.rows).toEqual([
      expect.objectContaining({ transition_key: `${id}:3:1`, pid: dying.pid, run_id: oldRun.runId }),
      expect.objectContaining({ transition_key: `${id}:3:2`, pid: worker.pid, run_id: redriveRun.runId }),
    ]);
    expect([oldRun.status, redriveRun.status]).toEqual(['FAILED', 'COMPLETED']);

    // The old run ended with the failure it had committed; its last activity failure says why it ran nothing.
    const history = await engine.service.client.workflow.getHandle(failed.workflowId, oldRun.runId).fetchHistory();
    // (on the fast path: the failure of its first step's local-activity marker, the step that found the record re-driven)
    const failures = history.events!.flatMap(
      (event) => event.activityTaskFailedEventAttributes?.failure?.message ?? event.markerRecordedEventAttributes?.failure?.message ?? [],
    );
    expect(failures.at(-1)).toContain('re-driven since: this delivery ran no step and committed nothing');
    const closed = history.events!.at(-1)!.workflowExecutionFailedEventAttributes?.failure?.message;
    expect(closed).toContain(`FAILED at step 3 (settle), transition ${id}:3:1: TEST_FATAL`);
  });
});
