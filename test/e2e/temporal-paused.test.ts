/**
 * Temporal paused under a running service (a real SIGSTOP of this file's own dev server,
 * never the shared one: the process found listening on its frontend port, proven stopped by
 * a call that times out before any request whose answer is asserted): starts answer 202 `dispatch: "pending"` and re-drives of a live
 * execution answer 503 TEMPORAL_UNAVAILABLE, each within `pipeline.temporal.call-timeout`
 * plus one second; a slow checkpoint admission is counted while it is slow; and after
 * SIGCONT every admitted run starts exactly once and the live run is never doubled.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenerPids } from '../../src/net';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { checkpointExecutionId } from '../../src/service/checkpoints';
import { TemporalCallTimeoutError, withCallDeadline } from '../../src/temporal/call-deadline';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

const CALL_TIMEOUT_MS = 2000;
/** The spec's one second past the call timeout, stretched on a loaded machine (test/helpers/time-scale.ts). */
const SLACK_MS = scaled(1000);
let engine: TestEngine;
let server: DevServer;
let paused = false;
const released = new Set<string>();
/** Step runs per execution: a run started twice would count twice. */
const runs: Record<string, number> = {};

/** Executions whose step fails (non-retryably) right now. */
const failing = new Set<string>();

const pipelines = [
  definePipeline({
    name: 'held',
    steps: [
      localStep('hold', async (_input: unknown, ctx) => {
        runs[ctx.executionId] = (runs[ctx.executionId] ?? 0) + 1;
        if (failing.has(ctx.executionId)) throw new NonRetryableException('bad input', 'BAD_INPUT');
        while (!released.has(ctx.executionId) && !ctx.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
        return {};
      }),
    ],
  }),
];

/** The process state letter from /proc/<pid>/stat ('T' = stopped by a signal). */
const processState = (pid: number) => /^\d+ \(.*\) (\S)/s.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))![1];

/**
 * Stops exactly the process that serves the frontend: the one listening on its port, which
 * must be the temporal binary we started (not its watchdog, not a stranger), then proves
 * it is stopped: the engine's own client gets no answer within a deadline.
 */
async function pause() {
  const serving = listenerPids(server.port);
  expect(serving).toEqual([server.pid]);
  expect(basename(readlinkSync(`/proc/${server.pid}/exe`))).toBe('temporal');
  process.kill(server.pid!, 'SIGSTOP');
  paused = true;
  await until(() => processState(server.pid!) === 'T', 10_000, 'the dev server to be stopped');
  const client = engine.service.client;
  // No answer within a second: our deadline or the gRPC one fires first, both say the same.
  const probe = await withCallDeadline(client, 1000, () => client.connection.workflowService.getSystemInfo({})).then(
    () => 'answered',
    (err: Error & { code?: number }) => (err instanceof TemporalCallTimeoutError || err.code === 4 /* DEADLINE_EXCEEDED */ ? 'timed out' : err.message),
  );
  expect(probe).toBe('timed out');
}
const resume = () => {
  if (paused) process.kill(server.pid!, 'SIGCONT');
  paused = false;
};
/** A request and how long its answer took. */
async function timed(send: () => Promise<Response>) {
  const begun = Date.now();
  const res = await send();
  const body = await res.json();
  return { res, body, elapsedMs: Date.now() - begun };
}
const redrive = (executionId: string, body: unknown, query = '') =>
  engine.request('POST', `/admin/tenants/acme/executions/${executionId}/redrive${query}`, { body });

beforeAll(async () => {
  server = await startDevServer();
  engine = await startTestEngine(pipelines, {
    'pipeline.temporal.address': server.address,
    'pipeline.temporal.call-timeout': CALL_TIMEOUT_MS,
    'pipeline.checkpoint.interval': '200ms',
    'pipeline.checkpoint.slow-admission': '300ms',
    // The pause must not look like a dead worker: its step is not redelivered meanwhile.
    'pipeline.orchestrator.worker.heartbeat-timeout': '120s',
  });
});
afterAll(async () => {
  resume();
  for (const id of Object.keys(runs)) released.add(id);
  await engine?.stop();
  await server?.stop();
});

describe('with the Temporal dev server paused (SIGSTOP)', () => {
  it('answers starts, re-drives and checkpoints in time, and starts every admitted run exactly once after SIGCONT', async () => {
    failing.add('failed-1');
    await engine.start('acme', { pipeline: 'held', executionId: 'failed-1' });
    const failed = await engine.waitFor('acme', 'failed-1', ['FAILED']);
    await engine.service.client.workflow
      .getHandle(failed.workflowId)
      .result()
      .catch(() => undefined);
    failing.delete('failed-1');
    await engine.start('acme', { pipeline: 'held', executionId: 'live-1' });
    const live = await engine.waitFor('acme', 'live-1', ['RUNNING']);
    await until(() => runs['live-1'] === 1, 20_000, 'the live run to be inside its step');

    await pause();
    try {
      // Starts: admitted, answered 202 pending within the deadline.
      for (const executionId of ['paused-1', 'paused-2', 'paused-3']) {
        const { res, body, elapsedMs } = await timed(() => engine.request('POST', '/api/tenants/acme/executions', { body: { pipeline: 'held', executionId } }));
        expect(res.status).toBe(202);
        expect(body).toMatchObject({ executionId, status: 'QUEUED', dispatch: 'pending', runId: null });
        expect(elapsedMs).toBeLessThan(CALL_TIMEOUT_MS + SLACK_MS);
      }

      // A re-drive that needs no answer from Temporal to be admitted: admitted, its start pending.
      const admittedRedrive = await timed(() => redrive('failed-1', { expectedVersion: failed.version, reason: 'input fixed', allowFailed: true }));
      expect(admittedRedrive.res.status).toBe(202);
      expect(admittedRedrive.body).toMatchObject({ status: 'QUEUED', dispatch: 'pending', runId: null });
      expect(admittedRedrive.elapsedMs).toBeLessThan(CALL_TIMEOUT_MS + SLACK_MS);

      // One sweep while Temporal is down tries one row, not each row for a full deadline.
      await engine.service.dispatcher.stopSweeper();
      const attempts = async () =>
        (await engine.service.db.query<{ n: number }>(`SELECT sum(attempts)::int AS n FROM execution_dispatch WHERE status = 'PENDING'`)).rows[0].n;
      const before = await attempts();
      expect(await engine.service.dispatcher.sweepOnce()).toBe(0);
      expect(await attempts()).toBe(before + 1);

      // Re-drive of a live execution: Temporal cannot say whether its run is alive → 503, nothing changed.
      const liveBefore = await engine.service.store.get('acme', 'live-1');
      for (const query of ['', '?dryRun=true']) {
        const { res, body, elapsedMs } = await timed(() =>
          redrive('live-1', { expectedVersion: live.version, reason: 'looks stuck', allowFailed: false }, query),
        );
        expect({ status: res.status, code: body.code }).toEqual({ status: 503, code: 'TEMPORAL_UNAVAILABLE' });
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(elapsedMs).toBeLessThan(CALL_TIMEOUT_MS + SLACK_MS);
      }
      expect(await engine.service.store.get('acme', 'live-1')).toEqual(liveBefore);
      const audit = await engine.service.db.query(`SELECT count(*)::int AS n FROM redrive_audit WHERE execution_id = 'live-1'`);
      expect(audit.rows[0].n).toBe(0);

      // A checkpoint admission stuck on Temporal is counted while it is stuck, before its start gives up.
      const published = await engine.request('POST', '/api/tenants/acme/checkpoints', { body: { handoffKey: 'h-1', pipeline: 'held', records: [] } });
      expect(published.status).toBe(202);
      const failures = (reason: string) =>
        engine.logs.filter((l) => l.event === 'checkpoint_publication_delivery_failure' && l.handoffKey === 'h-1' && l.reason === reason);
      await until(() => failures('SLOW_ADMISSION').length > 0, 20_000, 'the slow admission to be logged');
      expect(failures('ORCHESTRATION_START_FAILED')).toHaveLength(0);
      const metrics = await (await engine.service.app.request('/metrics')).text();
      expect(Number(/^pipeline_checkpoint_delivery_failures_total (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    } finally {
      resume();
      engine.service.dispatcher.startSweeper(500);
    }

    // Temporal is back: the sweeper starts each admitted run, once.
    const admitted = ['paused-1', 'paused-2', 'paused-3', checkpointExecutionId('h-1')];
    for (const executionId of admitted) {
      await until(() => runs[executionId] === 1, 60_000, `${executionId} to start`);
      released.add(executionId);
      await engine.waitFor('acme', executionId, ['SUCCEEDED'], 60_000);
    }
    released.add('live-1');
    released.add('failed-1');
    await engine.waitFor('acme', 'live-1', ['SUCCEEDED'], 60_000);
    await engine.waitFor('acme', 'failed-1', ['SUCCEEDED'], 60_000);
    for (const executionId of [...admitted, 'live-1']) {
      expect(await engine.runsOf('acme', executionId)).toHaveLength(1);
      expect(runs[executionId]).toBe(1);
    }
    // The failed run and the one re-drive run admitted during the pause: two runs, two step runs.
    expect(await engine.runsOf('acme', 'failed-1', 2)).toHaveLength(2);
    expect(runs['failed-1']).toBe(2);
  });

  it('answers a start with 202 pending within the deadline while Temporal is gone altogether', async () => {
    resume();
    await server.stop();
    const { res, body, elapsedMs } = await timed(() =>
      engine.request('POST', '/api/tenants/acme/executions', { body: { pipeline: 'held', executionId: 'killed-1' } }),
    );
    expect(res.status).toBe(202);
    expect(body).toMatchObject({ dispatch: 'pending', runId: null });
    expect(elapsedMs).toBeLessThan(CALL_TIMEOUT_MS + SLACK_MS);
  });
});
