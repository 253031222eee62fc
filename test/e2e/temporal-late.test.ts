/**
 * docker-compose's first start, reproduced: the service starts before Temporal answers (the
 * auto-setup image builds its schema first). It keeps trying with backoff while /readyz
 * answers 503 naming what it waits for, and once a Temporal dev server comes up about 30 s
 * later on the port reserved for it, the same process (no restart) becomes ready and runs an
 * execution. And a Ctrl-C while it waits is answered: one line, exit 130.
 */
import { type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { leasePort, type PortLease } from '../../src/port-allocator';
import { sha256Hex } from '../../src/api/middleware/bearer-auth';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { cleanUpMainProcesses, startMain } from '../helpers/main-process';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { until } from '../helpers/until';

const TOKEN = 'late-temporal-admin';
let child: ChildProcess | undefined;
let server: DevServer | undefined;
let database: TestDatabase | undefined;
const leases: PortLease[] = [];

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await once(child, 'exit');
  }
  cleanUpMainProcesses();
  await server?.stop();
  await database?.drop();
  for (const lease of leases) lease.release();
});

describe('a Temporal that comes up after the service', () => {
  it('answers a Ctrl-C while it waits with one line and exit 130, not a silent death', async () => {
    const db = await createTestDatabase();
    const temporalLease = await leasePort();
    try {
      const { child: waiting, output } = startMain({
        DATABASE_URL: db.url,
        // Reserved and never served: the service waits for it.
        TEMPORAL_ADDRESS: `127.0.0.1:${temporalLease.port}`,
        PIPELINE_AUTH_TOKENS: JSON.stringify([{ sha256: sha256Hex(TOKEN), role: 'admin', name: 'late' }]),
        PORT: '0',
        PIPELINE_DEMO_REST_PORT: '0',
        PIPELINE_DEMO_GRPC_PORT: '0',
      });
      const exited = once(waiting, 'exit');
      await until(() => output.stdout.includes('"event":"temporal_connect_waiting"') || waiting.exitCode !== null, 120_000, 'a connect attempt');
      expect(waiting.exitCode, output.stderr + output.stdout).toBeNull();
      waiting.kill('SIGINT');
      const [code, signal] = await exited;
      expect({ code, signal }).toEqual({ code: 130, signal: null });
      expect(output.stderr.trimEnd().split('\n').at(-1)).toBe('  Stopped (SIGINT) during start-up.');
      expect(output.stdout).not.toContain('service_started');
    } finally {
      temporalLease.release();
      await db.drop();
    }
  });

  it('is waited for with /readyz 503, then the same process becomes ready and runs an execution', async () => {
    database = await createTestDatabase();
    // Both must be known before the processes start (the service is probed while it waits; the dev
    // server comes later on its reserved port): leased outside the ephemeral range. The demo workers bind 0.
    const [httpLease, temporalLease] = [await leasePort(), await leasePort()];
    leases.push(httpLease, temporalLease);
    const [port, temporalPort] = [httpLease.port, temporalLease.port];
    const service = startMain({
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      PIPELINE_AUTH_TOKENS: JSON.stringify([{ sha256: sha256Hex(TOKEN), role: 'admin', name: 'late' }]),
      PORT: String(port),
      PIPELINE_DEMO_REST_PORT: '0',
      PIPELINE_DEMO_GRPC_PORT: '0',
    });
    child = service.child;
    const { output } = service;
    const pid = child.pid;
    const base = `http://127.0.0.1:${port}`;
    const readyz = async () => {
      try {
        const res = await fetch(`${base}/readyz`);
        return { status: res.status, body: await res.json() };
      } catch {
        return { status: 0, body: null };
      }
    };

    // Waiting, visibly: not ready (503 naming Temporal), alive, and trying again.
    await until(
      () => (output.stdout.match(/"event":"temporal_connect_waiting"/g) ?? []).length >= 2 || child!.exitCode !== null,
      120_000,
      'two connect attempts',
    );
    expect(child.exitCode, output.stderr + output.stdout).toBeNull();
    const waiting = await readyz();
    expect(waiting.status).toBe(503);
    expect(waiting.body).toMatchObject({ code: 'NOT_READY', status: 503 });
    expect(waiting.body.detail).toContain(`waiting for Temporal at 127.0.0.1:${temporalPort}`);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    // The scenario: Temporal appears about 30 s after the service started.
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    expect(child.exitCode, output.stderr + output.stdout).toBeNull();
    expect((await readyz()).status).toBe(503);
    server = await startDevServer({ port: temporalPort });

    await until(async () => (await readyz()).status === 200 || child!.exitCode !== null, 180_000, '/readyz 200 after Temporal came up');
    expect(child.exitCode, output.stderr + output.stdout).toBeNull();
    expect(child.pid).toBe(pid);
    expect(output.stdout).toContain('"event":"temporal_connected"');
    expect(output.stdout).not.toContain('service_failed_to_start');

    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const started = await fetch(`${base}/pipeline/api/tenants/acme/executions`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ pipeline: 'demo', executionId: 'late-1', input: { orderId: 1 } }),
    });
    expect(started.status).toBe(202);
    await until(
      async () => (await (await fetch(`${base}/pipeline/admin/tenants/acme/executions/late-1`, { headers })).json()).status === 'SUCCEEDED',
      120_000,
      'late-1 to succeed',
    );
  });
});
