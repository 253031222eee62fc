/**
 * The store under connection faults, through a TCP proxy in front of the real Postgres:
 * an admission whose answer was lost after it committed is retried and recognises its own
 * row (202, one record, one dispatch row; never 409 EXECUTION_EXISTS), a re-drive's the
 * same; with Postgres unreachable the API answers 503 STORE_UNAVAILABLE with Retry-After,
 * never a 500; and a lost idle connection is logged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

let engine: TestEngine;
let proxy: TcpProxy;
const failing = new Set<string>();

const pipelines = [
  definePipeline({
    name: 'plain',
    steps: [
      localStep(
        'one',
        (_input: unknown, ctx) => {
          if (failing.has(ctx.executionId)) throw Object.assign(new Error('down'), { code: 'DOWN' });
          return {};
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
];
const count = async (table: string, executionId: string) =>
  (await engine.database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE execution_id = $1`, [executionId])).rows[0].n;

beforeAll(async () => {
  proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  engine = await startTestEngine(
    pipelines,
    {},
    {
      storeUrl: (url) => {
        const viaProxy = new URL(url);
        viaProxy.port = String(proxy.port);
        return viaProxy.toString();
      },
    },
  );
}, scaled(120_000));
afterAll(async () => {
  await proxy?.setDown(false).catch(() => undefined);
  await engine?.stop();
  await proxy?.close();
});

describe('admission after a lost answer', () => {
  it('answers 202 to a start whose first INSERT committed but whose answer was lost', async () => {
    proxy.cutAfter('INSERT INTO execution_record');
    const res = await engine.request('POST', '/api/tenants/acme/executions', { body: { pipeline: 'plain', executionId: 'lost-1' } });
    expect(proxy.cuts).toBe(1);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ executionId: 'lost-1', version: 1, status: 'QUEUED' });
    expect(await count('execution_record', 'lost-1')).toBe(1);
    expect(await count('execution_dispatch', 'lost-1')).toBe(1);
    expect((await engine.waitFor('acme', 'lost-1', ['SUCCEEDED'])).status).toBe('SUCCEEDED');
    // A second request for the same id is a different admission: 409.
    const again = await engine.request('POST', '/api/tenants/acme/executions', { body: { pipeline: 'plain', executionId: 'lost-1' } });
    expect({ status: again.status, code: (await again.json()).code }).toEqual({ status: 409, code: 'EXECUTION_EXISTS' });
  });

  it('answers 202 to a re-drive whose admission committed but whose answer was lost', async () => {
    failing.add('lost-2');
    await engine.start('acme', { pipeline: 'plain', executionId: 'lost-2' });
    const failed = await engine.waitFor('acme', 'lost-2', ['FAILED']);
    await engine.service.client.workflow
      .getHandle(failed.workflowId)
      .result()
      .catch(() => undefined);
    failing.delete('lost-2');
    const cutsBefore = proxy.cuts;
    proxy.cutAfter("UPDATE execution_record SET version = version + 1, status = 'QUEUED'");
    const res = await engine.request('POST', '/admin/tenants/acme/executions/lost-2/redrive', {
      body: { expectedVersion: failed.version, reason: 'r', allowFailed: true },
    });
    expect(proxy.cuts).toBe(cutsBefore + 1);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ version: failed.version + 1, status: 'QUEUED', attempt: failed.attempt + 1 });
    expect(await count('redrive_audit', 'lost-2')).toBe(1);
    expect((await engine.waitFor('acme', 'lost-2', ['SUCCEEDED'])).status).toBe('SUCCEEDED');
  });
});

describe('Postgres unreachable', () => {
  it('answers 503 STORE_UNAVAILABLE with Retry-After, logs the lost connections, and recovers', async () => {
    await engine.start('acme', { pipeline: 'plain', executionId: 'down-1' });
    await engine.waitFor('acme', 'down-1', ['SUCCEEDED']);
    // Several connections open and idle when Postgres goes away (the background loops' queries
    // could otherwise hold the only ones at that moment): the pool must report the idle ones.
    await Promise.all(Array.from({ length: 5 }, () => engine.service.db.query('SELECT pg_sleep(0.05)')));
    await proxy.setDown(true);
    try {
      await until(() => engine.logs.some((l) => l.event === 'store_connection_lost'), 20_000, 'the pool to report a lost idle connection');
      for (const [method, path, body] of [
        ['GET', '/admin/tenants/acme/executions/down-1', undefined],
        ['POST', '/api/tenants/acme/executions', { pipeline: 'plain', executionId: 'down-2' }],
      ] as const) {
        const res = await engine.request(method, path, { body });
        const problem = await res.json();
        expect({ status: res.status, code: problem.code }).toEqual({ status: 503, code: 'STORE_UNAVAILABLE' });
        expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(JSON.stringify(problem)).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|SELECT|INSERT/);
      }
    } finally {
      await proxy.setDown(false);
    }
    expect((await engine.request('GET', '/admin/tenants/acme/executions/down-1')).status).toBe(200);
    expect(await count('execution_record', 'down-2')).toBe(0);
  });
});
