/**
 * The store's pool is bounded by configuration (pipeline.store.pool-size) and a query waits
 * for a connection at most pipeline.store.acquire-timeout: with every connection held, the
 * API answers 503 STORE_UNAVAILABLE (not retried into a longer wait, never a hang), and
 * answers again as soon as a connection is free. A connection idle past
 * pipeline.store.idle-timeout goes back to the server. Step commits are prepared statements
 * unless pipeline.store.prepared-statements is off.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { createPgDb } from '../../src/store/db';
import { ExecutionStore } from '../../src/store/execution-store';
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

describe('store pool idle timeout', () => {
  it('closes connections idle past it, while a pool with a long one keeps them', async () => {
    // Two pools on the test's database, told apart by application_name in pg_stat_activity, counted
    // in this database only: another suite on the same server runs this test too (a third suite
    // beside CI's two counted both suites' pools, 8).
    const named = (name: string) => {
      const url = new URL(engine.database.url);
      url.searchParams.set('application_name', name);
      return url.toString();
    };
    const short = createPgDb(named('idle-short'), { max: 4, idleTimeoutMs: 200 });
    const long = createPgDb(named('idle-long'), { max: 4, idleTimeoutMs: 600_000 });
    try {
      const connections = async (name: string) =>
        Number(
          (
            await engine.database.db.query<{ n: string }>(
              'SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
              [name],
            )
          ).rows[0].n,
        );
      // Four queries at once open four connections in each pool.
      await Promise.all([short, long].flatMap((db) => Array.from({ length: 4 }, () => db.query('SELECT pg_sleep(0.2)'))));
      expect(await connections('idle-long')).toBe(4);
      await until(async () => (await connections('idle-short')) === 0, 30_000, "the short pool's idle connections closed");
      // Same burst, same wait: the long pool still holds its four.
      expect(await connections('idle-long')).toBe(4);
    } finally {
      await Promise.all([short.close(), long.close()]);
    }
  });
});

describe('prepared step commits', () => {
  it('commits a step and reads the record through one prepared statement each per connection, and through none when they are off', async () => {
    for (const preparedStatements of [true, false]) {
      // One connection: the statements it prepared are the ones pg_prepared_statements lists.
      const db = createPgDb(engine.database.url, { max: 1, preparedStatements });
      try {
        const ids = [1, 2, 3].map((i) => `prepared-${preparedStatements}-${i}`);
        await db.query(
          `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, segment_input, run_id)
           SELECT 'acme', id, 'p', 'wf-' || id, 'RUNNING', 2, 3, 0, 1, '{}'::jsonb, 'run' FROM unnest($1::text[]) id`,
          [ids],
        );
        const store = new ExecutionStore(db);
        for (const executionId of ids) {
          const result = await store.commitSucceeded({ tenantId: 'acme', executionId, stepIndex: 0, attempt: 1, runId: 'run', output: { ok: true } });
          expect(result).toMatchObject({ committed: true, version: 3, status: 'RUNNING' });
        }
        // The record read too, three times.
        for (const executionId of ids) expect(await store.get('acme', executionId)).toMatchObject({ executionId, version: 3, currentStepIndex: 1 });
        const prepared = await db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements ORDER BY prepare_time');
        // Three commits and three reads: two statements, each prepared once (none when off).
        expect(prepared.rows.map((r) => (r.statement.includes('UPDATE execution_record') ? 'commit' : 'read'))).toEqual(
          preparedStatements ? ['commit', 'read'] : [],
        );
      } finally {
        await db.close();
      }
    }
  });
});
