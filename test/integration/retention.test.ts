/**
 * Retention against real Postgres: what it deletes and what it never deletes, counted
 * table by table; two deleters at once; and, through the engine (dev server, real
 * executions, checkpoints, a FAILED execution and its re-drive), tables that stop growing
 * under a zero retention while a FAILED execution past retention can still be re-driven.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../src/log';
import { NonRetryableException, definePipeline, localStep } from '../../src/pipeline/define';
import { Retention, type RetentionPolicy } from '../../src/service/retention';
import { createPgDb, type Db } from '../../src/store/db';
import { Metrics } from '../../src/metrics';
import { SignalsStore } from '../../src/store/signals-store';
import { ensureDedupeSchema } from '@pipeline-orchestrator/worker-kit';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { until } from '../helpers/until';

const DAY = 86_400_000;
const log = createLog({ level: 'silent' });
const policy = (change: Partial<RetentionPolicy> = {}): RetentionPolicy => ({
  succeededExecutionsMs: DAY,
  dlqMs: DAY,
  redriveAuditMs: DAY,
  rejectsMs: DAY,
  checkpointsMs: DAY,
  dispatchMs: DAY,
  dedupeMs: DAY,
  batchSize: 1000,
  dutyCycle: 0.5,
  ...change,
});

const TABLES = [
  'execution_record',
  'command_effect',
  'execution_attempt',
  'execution_dlq',
  'redrive_audit',
  'item_reject',
  'checkpoint_outbox',
  'execution_dispatch',
];

async function counts(db: Db, tables = TABLES): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of tables) out[table] = Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n);
  return out;
}

const ids = async (db: Db, sql: string) => (await db.query<{ id: string }>(sql)).rows.map((r) => r.id).sort();

/**
 * Rows aged `age` (a SQL interval) in tenant t: `prefix`-numbered SUCCEEDED executions with
 * 2 effects and 3 attempt rows each, a started dispatch row and 2 rejects each, and one
 * admitted checkpoint each. Written straight into the tables, like every row aged here: the
 * engine stamps a row with the time of its own commit, and retention acts on rows hours or
 * days old (the engine-driven test at the end covers rows the engine wrote).
 */
async function seedSucceeded(db: Db, prefix: string, count: number, age: string) {
  const at = `now() - interval '${age}'`;
  await db.query(
    `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, created_at, updated_at)
     SELECT 't', '${prefix}' || g, 'p', '${prefix}' || g, 'SUCCEEDED', 7, 2, 2, 1, ${at}, ${at} FROM generate_series(1, $1::int) g`,
    [count],
  );
  await db.query(
    `INSERT INTO command_effect (tenant_id, execution_id, step_index, step_name, status, attempt, transition_key)
     SELECT 't', '${prefix}' || g, s, 'c' || s, 'SUCCEEDED', 1, '${prefix}' || g || ':' || s || ':1' FROM generate_series(1, $1::int) g, generate_series(0, 1) s`,
    [count],
  );
  await db.query(
    `INSERT INTO execution_attempt (tenant_id, execution_id, step_index, attempt, outcome, version, committed_at)
     SELECT 't', '${prefix}' || g, 0, 1, 'SUCCEEDED', v, ${at} FROM generate_series(1, $1::int) g, generate_series(3, 5) v`,
    [count],
  );
  await db.query(
    `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, status, created_at, started_at)
     SELECT 't', '${prefix}' || g, 'start', '{}', 'STARTED', ${at}, ${at} FROM generate_series(1, $1::int) g`,
    [count],
  );
  await db.query(
    `INSERT INTO item_reject (tenant_id, execution_id, transition_key, ordinal, step, error_code, reason, fingerprint, created_at)
     SELECT 't', '${prefix}' || g, '${prefix}' || g || ':0:1', o, 's', 'BAD', 'r', 'f', ${at} FROM generate_series(1, $1::int) g, generate_series(0, 1) o`,
    [count],
  );
  await db.query(
    `INSERT INTO checkpoint_outbox (tenant_id, handoff_key, pipeline, records, record_count, status, execution_id, created_at, admitted_at)
     SELECT 't', 'h-${prefix}' || g, 'p', '[]', 0, 'ADMITTED', '${prefix}' || g, ${at}, ${at} FROM generate_series(1, $1::int) g`,
    [count],
  );
}

describe('retention on the store', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('deletes exactly what is past retention and never a FAILED, REMOTE_OUTCOME_UNKNOWN or live row, nor an audit whose envelope is kept', async () => {
    const db = database.db;
    await seedSucceeded(db, 'old-', 30, '2 days');
    await seedSucceeded(db, 'new-', 5, '1 hour');
    // Old rows retention must keep: records in every other status, an unredriven envelope,
    // a pending dispatch and a pending checkpoint.
    await db.query(
      `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, failed_step_index, created_at, updated_at)
       SELECT 't', s, 'p', s, s, 5, 2, 1, 1, CASE WHEN s IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN 1 END, now() - interval '90 days', now() - interval '90 days'
       FROM unnest(ARRAY['FAILED', 'REMOTE_OUTCOME_UNKNOWN', 'RUNNING', 'QUEUED']) s`,
    );
    const envelope = (id: string, version: number, redrivenAgo: string | null) =>
      db.query(
        `INSERT INTO execution_dlq (tenant_id, execution_id, transition_key, terminal_reason, error_code, record_version, envelope, created_at, redriven_at)
         VALUES ('t', $1, $1 || ':1:' || $2::int, 'retry_exhausted', 'TIMEOUT', $2::int, '{}', now() - interval '90 days', now() - $3::interval)`,
        [id, version, redrivenAgo],
      );
    const audit = (id: string, fromVersion: number, age: string) =>
      db.query(
        `INSERT INTO redrive_audit (tenant_id, execution_id, redrive_id, principal, reason, request, mode, from_status, from_version, to_version, resume_step_index, attempt, created_at)
         VALUES ('t', $1, 'r' || $2::int, 'ops', 'why', '{}', 'FAILED', 'FAILED', $2::int, $2::int + 1, 1, 2, now() - $3::interval)`,
        [id, fromVersion, age],
      );
    await envelope('FAILED', 5, null); // still FAILED at this version: kept
    await envelope('QUEUED', 3, '40 days'); // re-driven 40 days ago: deleted ...
    await audit('QUEUED', 3, '40 days'); // ... and then its audit, in the same pass
    await envelope('RUNNING', 2, '12 hours'); // re-driven 12 hours ago: kept ...
    await audit('RUNNING', 2, '3 days'); // ... so its audit is kept, though older than the audit retention
    await db.query(
      `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, created_at) VALUES ('t', 'QUEUED', 'start', '{}', now() - interval '90 days')`,
    );
    await db.query(
      `INSERT INTO checkpoint_outbox (tenant_id, handoff_key, pipeline, records, record_count, execution_id, created_at) VALUES ('t', 'pending', 'p', '[]', 0, 'x', now() - interval '90 days')`,
    );
    await db.query(
      `INSERT INTO signal_minute (tenant_id, signal, minute, shard, n) VALUES ('t', 'succeeded', date_trunc('minute', now() - interval '3 days'), 0, 4), ('t', 'succeeded', date_trunc('minute', now() - interval '2 hours'), 0, 2)`,
    );
    // Bulk re-drive jobs: one finished long ago (it goes, with its items), one finished
    // recently and one still running since long ago (both kept).
    await db.query(
      `INSERT INTO redrive_job (tenant_id, job_id, status, principal, reason, request, batch_size, rate_per_second, created_at, finished_at) VALUES
         ('t', 'old-done', 'COMPLETED', 'ops', 'why', '{}', 10, 5, now() - interval '3 days', now() - interval '2 days'),
         ('t', 'new-done', 'ABORTED', 'ops', 'why', '{}', 10, 5, now() - interval '3 days', now() - interval '1 hour'),
         ('t', 'running', 'RUNNING', 'ops', 'why', '{}', 10, 5, now() - interval '3 days', NULL)`,
    );
    await db.query(
      `INSERT INTO redrive_job_item (tenant_id, job_id, execution_id, ordinal, expected_version)
       SELECT 't', j, 'x' || o, o, 1 FROM unnest(ARRAY['old-done', 'new-done', 'running']) j, generate_series(1, 3) o`,
    );
    // Their counter rows (two shards each) go with the job.
    await db.query(
      `INSERT INTO redrive_job_count (tenant_id, job_id, shard, skipped) SELECT 't', j, s, 1 FROM unnest(ARRAY['old-done', 'new-done', 'running']) j, generate_series(0, 1) s`,
    );
    await ensureDedupeSchema(db);
    await db.query(
      `INSERT INTO transition_worker_dedupe (idempotency_key, tenant_id, state, lease_until, completed_at) VALUES
         ('t/old-done:0:1', 't', 'DONE', NULL, now() - interval '2 days'),
         ('t/new-done:0:1', 't', 'DONE', NULL, now() - interval '1 hour'),
         ('t/abandoned:0:1', 't', 'IN_PROGRESS', now() - interval '2 days', NULL),
         ('t/working:0:1', 't', 'IN_PROGRESS', now() + interval '1 minute', NULL)`,
    );
    const before = await counts(db);
    // Per-minute counts past the 49 h triage horizon (the seeded one, and the envelopes' own minutes 90 days ago).
    const expiredMinutes = Number(
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM signal_minute WHERE minute < now() - interval '49 hours'`)).rows[0].n,
    );
    expect(expiredMinutes).toBeGreaterThanOrEqual(2);
    // Per-minute counts older than 3 h (the old rejects' minutes) are rolled into hours, their sums kept.
    const kept = `minute >= now() - interval '49 hours'`;
    const toCompact = Number(
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM signal_minute WHERE ${kept} AND shard >= 0 AND minute < date_trunc('hour', now() - interval '3 hours')`,
        )
      ).rows[0].n,
    );
    expect(toCompact).toBeGreaterThan(0);
    const sums = `SELECT tenant_id, signal, key, sum(n)::int AS n FROM signal_minute WHERE ${kept} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
    const sumsBefore = (await db.query(sums)).rows;

    const retention = new Retention(db, policy({ batchSize: 7 }), log);
    const deleted = await retention.pass();
    expect(deleted).toEqual({
      execution_record: 30,
      command_effect: 60,
      execution_attempt: 90,
      execution_dlq: 1,
      redrive_audit: 1,
      redrive_job: 1,
      redrive_job_count: 2,
      redrive_job_item: 3,
      item_reject: 60,
      checkpoint_outbox: 30,
      execution_dispatch: 30,
      signal_minute: expiredMinutes,
      signal_minute_compacted: toCompact,
      dlq_group_day: 0,
      transition_worker_dedupe: 2,
    });
    const after = await counts(db);
    for (const table of TABLES) expect(after[table], table).toBe(before[table] - (deleted[table] ?? 0));
    expect((await db.query(sums)).rows).toEqual(sumsBefore);
    expect(
      Number(
        (
          await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM signal_minute WHERE shard >= 0 AND minute < date_trunc('hour', now() - interval '3 hours')`,
          )
        ).rows[0].n,
      ),
    ).toBe(0);

    expect(await ids(db, `SELECT execution_id AS id FROM execution_record WHERE execution_id NOT LIKE 'new-%'`)).toEqual([
      'FAILED',
      'QUEUED',
      'REMOTE_OUTCOME_UNKNOWN',
      'RUNNING',
    ]);
    expect(await ids(db, `SELECT execution_id AS id FROM execution_dlq`)).toEqual(['FAILED', 'RUNNING']);
    expect(await ids(db, `SELECT execution_id AS id FROM redrive_audit`)).toEqual(['RUNNING']);
    expect(await ids(db, `SELECT execution_id AS id FROM execution_dispatch WHERE status = 'PENDING'`)).toEqual(['QUEUED']);
    expect(await ids(db, `SELECT handoff_key AS id FROM checkpoint_outbox WHERE status = 'PENDING'`)).toEqual(['pending']);
    expect(await ids(db, `SELECT idempotency_key AS id FROM transition_worker_dedupe`)).toEqual(['t/new-done:0:1', 't/working:0:1']);
    expect(await ids(db, `SELECT DISTINCT job_id AS id FROM redrive_job_item`)).toEqual(['new-done', 'running']);
    expect(await ids(db, `SELECT job_id AS id FROM redrive_job`)).toEqual(['new-done', 'running']);
    expect(await ids(db, `SELECT DISTINCT job_id AS id FROM redrive_job_count`)).toEqual(['new-done', 'running']);
    for (const table of ['execution_record', 'command_effect', 'item_reject', 'checkpoint_outbox', 'execution_dispatch']) {
      expect(await ids(db, `SELECT DISTINCT execution_id AS id FROM ${table} WHERE execution_id LIKE 'old-%'`), table).toEqual([]);
    }
    // The totals follow the deletes; a second pass finds nothing (idempotent).
    const signals = new SignalsStore(db);
    expect(await signals.total('reject')).toBe(after.item_reject);
    expect(await signals.total('dlq')).toBe(after.execution_dlq);
    expect(await signals.total('FAILED')).toBe(1);
    expect(Object.values(await retention.pass()).every((n) => n === 0)).toBe(true);
    expect(await counts(db)).toEqual(after);
  });

  it('two deleters at once take disjoint batches: their counts add up to what was eligible, nothing deleted twice or wrongly', async () => {
    const db = database.db;
    // DELETE, not TRUNCATE: TRUNCATE fires no row triggers, so the signal totals would not follow.
    for (const table of ['execution_record', 'command_effect', 'execution_attempt', 'execution_dispatch', 'item_reject', 'checkpoint_outbox'])
      await db.query(`DELETE FROM ${table}`);
    await seedSucceeded(db, 'm-', 1500, '3 days');
    await seedSucceeded(db, 'keep-', 50, '1 minute');
    const before = await counts(db);
    const processes = [createPgDb(database.url, { max: 3 }), createPgDb(database.url, { max: 3 })];
    try {
      const deleters = processes.map((pool) => new Retention(pool, policy({ batchSize: 50 }), log));
      const drain = async (retention: Retention) => {
        const total: Record<string, number> = {};
        for (;;) {
          const deleted = await retention.pass();
          for (const [table, n] of Object.entries(deleted)) total[table] = (total[table] ?? 0) + n;
          if (Object.values(deleted).every((n) => n === 0)) return total;
        }
      };
      const [a, b] = await Promise.all(deleters.map(drain));
      const expected = {
        execution_record: 1500,
        command_effect: 3000,
        execution_attempt: 4500,
        item_reject: 3000,
        checkpoint_outbox: 1500,
        execution_dispatch: 1500,
      };
      for (const [table, n] of Object.entries(expected)) {
        expect((a[table] ?? 0) + (b[table] ?? 0), table).toBe(n);
      }
      // Both really deleted (concurrently), and what is left is exactly the recent rows.
      expect(a.execution_record).toBeGreaterThan(0);
      expect(b.execution_record).toBeGreaterThan(0);
      const after = await counts(db);
      for (const [table, n] of Object.entries(expected)) expect(after[table], table).toBe(before[table] - n);
      expect(await ids(db, `SELECT execution_id AS id FROM execution_record WHERE execution_id NOT LIKE 'keep-%' AND execution_id LIKE 'm-%'`)).toEqual([]);
      expect(await new SignalsStore(db).total('reject')).toBe(after.item_reject);
    } finally {
      await Promise.all(processes.map((pool) => pool.close()));
    }
  });
});

describe('retention that catches up', () => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.drop();
  });

  /** `count` item rejects three days old (one kind's backlog; nothing else is past retention). */
  const rejects = (db: Db, count: number, prefix = 'r') =>
    db.query(
      `INSERT INTO item_reject (tenant_id, execution_id, transition_key, ordinal, step, item_key, error_code, reason, fingerprint, created_at)
       SELECT 't', $2 || g, $2 || g || ':0:1', 0, 's', NULL, 'BAD', 'r', 'fp', now() - interval '3 days' FROM generate_series(1, $1::int) g`,
      [count, prefix],
    );
  const backlogGauge = async (metrics: Metrics) =>
    Object.fromEntries((await metrics.retentionBacklog.get()).values.map((v) => [v.labels.table as string, v.value]));

  it('a pass keeps going while a kind is behind (past the 20 batches a pass used to stop at), and reports no backlog once caught up', async () => {
    const db = database.db;
    await rejects(db, 30 * 4 + 3);
    const metrics = new Metrics(new SignalsStore(db), 5);
    const retention = new Retention(db, policy({ batchSize: 4 }), log, metrics, 3_600_000);
    const result = await retention.run();
    expect(result.deleted.item_reject).toBe(123);
    // 30 full batches, then a short one: 31 rounds, the last one ran item_reject alone.
    expect(result.rounds).toBe(31);
    expect(result.behind).toEqual([]);
    expect((await backlogGauge(metrics)).item_reject).toBe(0);
    expect(await new SignalsStore(db).total('reject')).toBe(0);
  });

  it('a pass stops when its share of the interval is used, and the gauge counts what it left', async () => {
    const db = database.db;
    await rejects(db, 100);
    const metrics = new Metrics(new SignalsStore(db), 5);
    // A 1 ms interval at half duty: the first round (one batch of every kind) always runs, no second one.
    const retention = new Retention(db, policy({ batchSize: 4, dutyCycle: 0.5 }), log, metrics, 1);
    const result = await retention.run();
    expect(result.rounds).toBe(1);
    // The rejects' own per-minute counts (8 shards of one minute, 3 days old) are behind too.
    expect(result.behind).toEqual(['item_reject', 'signal_minute', 'signal_minute_compacted']);
    expect(result.deleted.item_reject).toBe(4);
    expect(retention.backlog.get('item_reject')).toBe(96);
    expect(await backlogGauge(metrics)).toMatchObject({ item_reject: 96, execution_record: 0, execution_dlq: 0 });
    // The count stops at 100 batches: a larger backlog reads as at least that much, at a bounded cost.
    await rejects(db, 500, 'more-');
    await retention.run();
    expect(retention.backlog.get('item_reject')).toBe(400);
  });
});

describe('retention through the engine', () => {
  let engine: TestEngine;
  beforeAll(async () => {
    engine = await startTestEngine(
      [
        definePipeline({
          name: 'items',
          steps: [
            localStep('check', (_input: unknown, ctx) => {
              ctx.reject({ id: 'x' }, { errorCode: 'BAD_ITEM', reason: 'item x is bad' });
              return { ok: true };
            }),
            localStep('done', () => ({ done: true })),
          ],
        }),
        // Fails on its first attempt; a re-drive (a new attempt) succeeds.
        definePipeline({
          name: 'flaky',
          steps: [
            localStep('call', (_input: unknown, ctx) => {
              if (ctx.attempt === 1) throw new NonRetryableException('contract changed', 'CONTRACT_MISMATCH');
              return { ok: true };
            }),
          ],
        }),
      ],
      {
        // Everything finished is past retention at once; the pass runs when the test says.
        'pipeline.retention.succeeded-executions': 0,
        'pipeline.retention.dlq': 0,
        'pipeline.retention.redrive-audit': 0,
        'pipeline.retention.rejects': 0,
        'pipeline.retention.checkpoints': 0,
        'pipeline.retention.dispatch': 0,
        'pipeline.retention.interval': '1h',
      },
    );
  });
  afterAll(async () => {
    await engine?.stop();
  });

  it('keeps the tables from growing while executions flow, and a FAILED execution past retention can still be re-driven', async () => {
    const db = engine.service.db;
    const sizes: Record<string, number>[] = [];
    await engine.start('t', { pipeline: 'flaky', executionId: 'f-1' });
    const failed = await engine.waitFor('t', 'f-1', ['FAILED']);
    for (let round = 1; round <= 4; round++) {
      const started = Array.from({ length: 8 }, (_, i) => `r${round}-${i}`);
      for (const executionId of started) await engine.start('t', { pipeline: 'items', executionId });
      const handoffKey = `h-${round}`;
      const published = await engine.request('POST', '/api/tenants/t/checkpoints', { body: { handoffKey, pipeline: 'items', records: [] } });
      expect(published.status).toBe(202);
      for (const executionId of started) await engine.waitFor('t', executionId, ['SUCCEEDED']);
      await until(
        async () => (await engine.service.store.getByKey('t', handoffKey))?.status === 'SUCCEEDED',
        30_000,
        `the checkpoint ${handoffKey}'s execution`,
      );
      await until(
        async () => (await db.query(`SELECT 1 FROM checkpoint_outbox WHERE handoff_key = $1 AND status = 'ADMITTED'`, [handoffKey])).rowCount === 1,
        30_000,
        'admission',
      );
      await until(async () => (await db.query(`SELECT 1 FROM execution_dispatch WHERE status = 'PENDING'`)).rowCount === 0, 30_000, 'every dispatch started');
      const deleted = await engine.service.retention.pass();
      expect(deleted.execution_record).toBe(9);
      expect(deleted.item_reject).toBe(9);
      sizes.push(await counts(db));
    }
    // Steady state: 36 executions went through, the tables hold the same rows after every
    // round: the FAILED execution, its envelope and its attempt log.
    expect(sizes[0]).toEqual({ ...Object.fromEntries(TABLES.map((t) => [t, 0])), execution_record: 1, execution_dlq: 1, execution_attempt: 1 });
    for (const size of sizes.slice(1)) expect(size).toEqual(sizes[0]);
    expect(await engine.service.store.get('t', 'f-1')).toMatchObject({ status: 'FAILED', version: failed.version });

    // Past retention four times over, the FAILED execution is still there and can be re-driven.
    const res = await engine.request('POST', '/admin/tenants/t/executions/f-1/redrive', {
      body: { expectedVersion: failed.version, reason: 'contract fixed', allowFailed: true },
    });
    expect(res.status).toBe(202);
    await engine.waitFor('t', 'f-1', ['SUCCEEDED']);
    await until(
      async () => (await db.query(`SELECT 1 FROM execution_dispatch WHERE status = 'PENDING'`)).rowCount === 0,
      30_000,
      'the re-drive dispatch started',
    );
    // Now succeeded and explained: the record, its envelope and then its audit go too.
    expect(await engine.service.retention.pass()).toMatchObject({ execution_record: 1, execution_dlq: 1, redrive_audit: 1 });
    expect(await counts(db)).toEqual(Object.fromEntries(TABLES.map((t) => [t, 0])));
    const metrics = await (await engine.service.app.request('/metrics')).text();
    expect(metrics).toContain('pipeline_retention_deleted_total{table="execution_record"} 37');
    expect(metrics).toContain('pipeline_retention_deleted_total{table="item_reject"} 36');
  });
});
