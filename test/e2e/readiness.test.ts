/**
 * Readiness against this file's OWN Temporal dev server (never the shared one): /readyz
 * answers 200 while Postgres and Temporal answer, 503 naming Temporal within the call
 * deadline once the server is stopped, and 200 again when it returns on the same port.
 * /healthz (liveness) stays 200 throughout.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaseGivenPort } from '../../src/port-allocator';
import { startDevServer, type DevServer } from '../../src/temporal/dev-server';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy';
import { scaled } from '../helpers/time-scale';
import { until } from '../helpers/until';

const CALL_TIMEOUT_MS = 1000;
let server: DevServer | undefined;
let engine: TestEngine;
let postgres: TcpProxy;

beforeAll(async () => {
  server = await startDevServer();
  // Postgres through a proxy this file can take down.
  postgres = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
  engine = await startTestEngine(
    [],
    { 'pipeline.temporal.address': server.address, 'pipeline.role': 'api', 'pipeline.temporal.call-timeout': `${CALL_TIMEOUT_MS}ms` },
    {
      storeUrl: (url) => {
        const proxied = new URL(url);
        proxied.host = `127.0.0.1:${postgres.port}`;
        return proxied.toString();
      },
    },
  );
});
afterAll(async () => {
  await engine?.stop();
  await server?.stop();
  await postgres?.close();
});

async function readyz(): Promise<{ status: number; body: any; ms: number }> {
  const started = Date.now();
  const res = await engine.service.app.request('/readyz');
  return { status: res.status, body: await res.json(), ms: Date.now() - started };
}

describe('/readyz', () => {
  it('answers 503 naming Temporal within the call deadline while it is down, and 200 when it returns', async () => {
    // Ready first (a check past its 1 s deadline on a loaded machine answers 503 for that call).
    let ready: Awaited<ReturnType<typeof readyz>> | undefined;
    await until(async () => (ready = await readyz()).status === 200, 60_000, '/readyz to answer 200 before the fault');
    expect(ready).toMatchObject({ status: 200, body: { status: 'ready', checks: { postgres: 'up', temporal: 'up' } } });

    // Kept leased while it is down, so no other allocator hands the port out before the restart.
    const port = await leaseGivenPort(server!.port);
    expect(port).toBeDefined();
    await server!.stop();
    server = undefined;

    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ code: 'NOT_READY', checks: { postgres: 'up', temporal: 'down' } });
    // The call deadline answered, not the SDK's own retries running out (about 15 s of UNAVAILABLE),
    // which the time bound below cannot tell apart on a machine loaded enough to stretch it.
    expect(down.body.errors.temporal).toMatch(/within 1000 ms|deadline/i);
    expect(down.body.detail).toBe('not ready: temporal');
    // Bounded by the call deadline (plus scheduling slack on a loaded machine), never a hang.
    expect(down.ms).toBeLessThan(CALL_TIMEOUT_MS + scaled(4000));
    expect((await engine.service.app.request('/healthz')).status).toBe(200);

    server = await startDevServer({ port: port!.port }).finally(() => port!.release());
    await until(async () => (await readyz()).status === 200, 60_000, '/readyz to answer 200 after Temporal returned');
  });

  it('answers 503 naming Postgres within the call deadline while it is unreachable, and 200 when it returns', async () => {
    await until(async () => (await readyz()).status === 200, 60_000, '/readyz to answer 200 before the fault');
    await postgres.setDown(true);
    const down = await readyz();
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ code: 'NOT_READY', detail: 'not ready: postgres', checks: { postgres: 'down', temporal: 'up' } });
    expect(down.ms).toBeLessThan(CALL_TIMEOUT_MS + scaled(4000));
    expect((await engine.service.app.request('/healthz')).status).toBe(200);
    await postgres.setDown(false);
    await until(async () => (await readyz()).status === 200, 60_000, '/readyz to answer 200 after Postgres returned');
  });

  it('answers 503 while the process shuts down', async () => {
    engine.service.readiness.markStopping();
    const stopping = await readyz();
    expect(stopping.status).toBe(503);
    expect(stopping.body.errors).toMatchObject({ process: 'shutting down' });
  });
});
