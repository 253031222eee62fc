/**
 * The store's pool is bounded by configuration (pipeline.store.pool-size) and a query waits
 * for a connection at most pipeline.store.acquire-timeout: with every connection held, the
 * API answers 503 STORE_UNAVAILABLE (not retried into a longer wait, never a hang), and
 * answers again as soon as a connection is free.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { scaled } from '../helpers/time-scale';
import { Latch, until } from '../helpers/until';

let engine: TestEngine;

beforeAll(async () => {
  // No worker: the one connection is shared only with the API and the service's own loops. The
  // acquire timeout stretches with the load, so taking the connection for the test's transaction
  // does not time out behind one of those loops on a busy machine.
  engine = await startTestEngine(
    [definePipeline({ name: 'p', steps: [localStep('only', (input: unknown) => input)] })],
    { 'pipeline.store.pool-size': 1, 'pipeline.store.acquire-timeout': scaled(300) },
    { worker: false },
  );
});
afterAll(async () => engine?.stop());

describe('store pool size and acquire timeout', () => {
  it('answers 503 STORE_UNAVAILABLE while every connection is held, and 200 once one is free', async () => {
    const release = new Latch();
    const holding = new Latch();
    const held = engine.service.db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      holding.open();
      await release.wait();
    });
    await holding.wait();
    const busy = await engine.request('GET', '/admin/tenants/acme/executions');
    const body = await busy.json();
    expect([busy.status, body.code]).toEqual([503, 'STORE_UNAVAILABLE']);
    expect(busy.headers.get('retry-after')).toBeTruthy();
    expect(engine.logs.some((l) => l.event === 'store_pool_exhausted' && l.poolSize === 1)).toBe(true);
    release.open();
    await held;
    // Free again: answered as soon as no loop holds the one connection (until: one may, briefly).
    let free = 0;
    await until(
      async () => (free = (await engine.request('GET', '/admin/tenants/acme/executions')).status) === 200,
      30_000,
      'a 200 once the connection is free',
    );
    expect(free).toBe(200);
  });
});
