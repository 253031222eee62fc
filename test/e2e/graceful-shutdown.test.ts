/**
 * Graceful shutdown: stop() turns the process not ready at once, lets an HTTP request whose
 * body is still arriving finish (202), and lets a running activity finish and commit within
 * pipeline.shutdown.grace-period, instead of cutting either off.
 */
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

let release: () => void = () => undefined;
const held = new Promise<void>((resolve) => (release = resolve));
let invocations = 0;

const pipeline = definePipeline({
  name: 'held',
  steps: [
    localStep('hold', async (input: unknown) => {
      invocations++;
      await held;
      return input;
    }),
    localStep('after', (input: unknown) => input),
  ],
});

let engine: TestEngine;
let port: number;
let stopped = false;

beforeAll(async () => {
  engine = await startTestEngine([pipeline], { 'pipeline.server.port': 0, 'pipeline.shutdown.grace-period': '60s' }, { http: true });
  port = engine.service.ports.http!;
});
afterAll(async () => {
  release();
  if (!stopped) await engine?.stop();
  else await engine?.database.drop();
});

describe('graceful shutdown', () => {
  it('drains an in-flight request and lets the running activity finish and commit before stopping', async () => {
    await engine.start('acme', { pipeline: 'held', executionId: 'held-1', input: { n: 1 } });
    await until(() => invocations === 1, 30_000, 'the held step to start');

    // A request in flight: headers and half of its body sent.
    let answer: { status: number; body: string } | undefined;
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/pipeline/api/tenants/acme/executions',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => (answer = { status: res.statusCode!, body }));
      },
    );
    req.write('{"pipeline":"held","executionId":"held-2",');
    await until(() => (req.socket?.bytesWritten ?? 0) > 0, 10_000, 'the first half of the body to be sent');

    const stopping = engine.service.stop().then(() => (stopped = true));
    // Not ready at once; the worker drains (its activity is still running).
    await until(
      async () => /DRAINING|STOPPING|DRAINED/.test((await engine.service.readiness.check()).errors.worker ?? ''),
      30_000,
      'the worker to start draining',
    );
    const report = await engine.service.readiness.check();
    expect(report.ready).toBe(false);
    expect(report.errors.process).toBe('shutting down');
    expect(stopped).toBe(false);

    // The rest of the body arrives after stop() began: the request is still answered.
    req.end('"input":{"n":2}}');
    await until(() => answer !== undefined, 30_000, 'the in-flight request to be answered');
    expect(answer!.status).toBe(202);
    expect(stopped).toBe(false);

    // The activity finishes inside the grace period and its commit lands before stop() returns.
    release();
    await stopping;
    const record = await engine.database.db.query<{ version: number; current_step_index: number }>(
      `SELECT version, current_step_index FROM execution_record WHERE execution_id = 'held-1'`,
    );
    expect(record.rows[0].current_step_index).toBe(1);
    // created + RUNNING + the held step's commit
    expect(record.rows[0].version).toBe(3);
    expect(invocations).toBe(1);
  });
});

describe('graceful shutdown past the grace period', () => {
  it('does not let a step that ignores its cancellation hold the process', async () => {
    let started = 0;
    const stuck = definePipeline({
      name: 'stuck',
      steps: [
        localStep('forever', async () => {
          started++;
          await new Promise(() => undefined);
        }),
      ],
    });
    const other = await startTestEngine([stuck], { 'pipeline.shutdown.grace-period': '1s' });
    try {
      await other.start('acme', { pipeline: 'stuck', executionId: 'stuck-1', input: null });
      await until(() => started === 1, 30_000, 'the stuck step to start');
      await other.service.stop();
      // stop() returned: the step was cancelled after the grace period and, as it ignored that, given up on.
      const record = await other.database.db.query<{ status: string; version: number }>(
        `SELECT status, version FROM execution_record WHERE execution_id = 'stuck-1'`,
      );
      expect(record.rows[0]).toEqual({ status: 'RUNNING', version: 2 });
      expect(other.logs.filter((line) => line.event === 'worker_shutdown_forced')).toHaveLength(1);
    } finally {
      await other.database.drop();
    }
  });
});
