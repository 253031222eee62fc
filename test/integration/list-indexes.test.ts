/**
 * Every documented filter of every list endpoint, and every read of triage and the metrics
 * gauges, is served by an index: on a seeded store, the exact statements the stores send
 * are run under EXPLAIN ANALYZE with sequential scans and sorts disabled; a plan that
 * still needs a sequential scan of a history table, or (for a list page) a sort or a scan
 * that reads many times the page's rows (kept or filtered out), has no index that serves it.
 * Whether the planner picks the index at scale is measured by the growth benchmark.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/store/db';
import { DlqStore } from '../../src/store/dlq-store';
import { ExecutionStore } from '../../src/store/execution-store';
import { FailureGroupStore } from '../../src/store/failure-group-store';
import { RejectStore } from '../../src/store/reject-store';
import { SignalsStore } from '../../src/store/signals-store';
import { EXECUTION_STATUSES, TERMINAL_REASONS } from '../../src/spec-words';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { SEEDED_CODES, SEEDED_TABLES, seedStore } from '../helpers/seed';

let database: TestDatabase;

beforeAll(async () => {
  database = await createTestDatabase();
  await seedStore(database.db, { executions: 20_000, rejects: 10_000, rebuildIndexes: true });
});
afterAll(async () => {
  await database?.drop();
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Filter?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** A Db that records each statement it runs. */
function recording(db: Db): { db: Db; sent: { sql: string; params?: unknown[] }[] } {
  const sent: { sql: string; params?: unknown[] }[] = [];
  return {
    sent,
    db: {
      ...db,
      query: (sql, params) => {
        sent.push({ sql, params });
        return db.query(sql, params);
      },
    } as Db,
  };
}

/** The executed plan of each statement `read` sends, with sequential scans and sorts made a last resort. */
async function plans(read: (db: Db) => Promise<unknown>): Promise<{ sql: string; nodes: PlanNode[] }[]> {
  const spy = recording(database.db);
  await read(spy.db);
  const out: { sql: string; nodes: PlanNode[] }[] = [];
  for (const { sql, params } of spy.sent) {
    const plan = await database.db.transaction(async (tx) => {
      await tx.query('SET LOCAL enable_seqscan = off');
      await tx.query('SET LOCAL enable_sort = off');
      return (await tx.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params)).rows[0]['QUERY PLAN'][0].Plan;
    });
    const nodes: PlanNode[] = [];
    const walk = (node: PlanNode) => {
      nodes.push(node);
      node.Plans?.forEach(walk);
    };
    walk(plan);
    out.push({ sql, nodes });
  }
  return out;
}

const seqScansOfHistory = (nodes: PlanNode[]) =>
  nodes.filter((n) => n['Node Type'] === 'Seq Scan' && SEEDED_TABLES.includes(n['Relation Name'] ?? '')).map((n) => n['Relation Name']);
/**
 * Scans of a history table that read far more rows than a page (kept plus filtered out).
 * The planner may rightly read a few pages' worth through a less selective index (a
 * filter that keeps 1 row in 5); what must never happen is a read that grows with history.
 */
const PAGE = 50;
const tooManyRows = (nodes: PlanNode[]) =>
  nodes
    .filter(
      (n) =>
        SEEDED_TABLES.includes(n['Relation Name'] ?? '') &&
        n['Actual Rows'] * n['Actual Loops'] + (n['Rows Removed by Filter'] ?? 0) * n['Actual Loops'] > 10 * PAGE,
    )
    .map(
      (n) =>
        `${n['Index Name'] ?? n['Relation Name']}: ${n['Actual Rows'] * n['Actual Loops']} rows kept, ${(n['Rows Removed by Filter'] ?? 0) * n['Actual Loops']} filtered out (${n.Filter})`,
    );
// An Incremental Sort only orders ties of an index's order (bounded by the page); a Sort reads everything first.
const sorts = (nodes: PlanNode[]) => nodes.filter((n) => n['Node Type'] === 'Sort').map((n) => n['Node Type']);

async function expectIndexedPage(read: (db: Db) => Promise<unknown>) {
  for (const { sql, nodes } of await plans(read)) {
    expect({ sql, seqScans: seqScansOfHistory(nodes), tooManyRows: tooManyRows(nodes), sorts: sorts(nodes) }).toEqual({
      sql,
      seqScans: [],
      tooManyRows: [],
      sorts: [],
    });
    expect(nodes.some((n) => n['Index Name'])).toBe(true);
  }
}

describe('list endpoints read an index in page order', () => {
  it('executions, by every status, with and without a cursor', async () => {
    const after = { createdAt: new Date(Date.now() - 3_600_000).toISOString(), executionId: 'e000010000' };
    await expectIndexedPage((db) => new ExecutionStore(db).list('big', { limit: PAGE }));
    await expectIndexedPage((db) => new ExecutionStore(db).list('big', { limit: PAGE, after }));
    for (const status of EXECUTION_STATUSES) {
      await expectIndexedPage((db) => new ExecutionStore(db).list('big', { status, limit: PAGE }));
      await expectIndexedPage((db) => new ExecutionStore(db).list('big', { status, limit: PAGE, after }));
    }
  });

  it('DLQ envelopes, by errorCode (frequent, rare, absent), by terminalReason, by both, with a cursor', async () => {
    const dlq = (db: Db, filter: { terminalReason?: (typeof TERMINAL_REASONS)[number]; errorCode?: string; before?: number }) =>
      new DlqStore(db).list('big', { limit: PAGE, ...filter });
    await expectIndexedPage((db) => dlq(db, {}));
    await expectIndexedPage((db) => dlq(db, { before: 500 }));
    for (const errorCode of [SEEDED_CODES.frequent, SEEDED_CODES.rare, 'ABSENT_CODE']) {
      await expectIndexedPage((db) => dlq(db, { errorCode }));
      for (const terminalReason of TERMINAL_REASONS) await expectIndexedPage((db) => dlq(db, { errorCode, terminalReason, before: 500 }));
    }
    for (const terminalReason of TERMINAL_REASONS) await expectIndexedPage((db) => dlq(db, { terminalReason }));
  });

  it('item rejects, with and without a cursor', async () => {
    await expectIndexedPage((db) => new RejectStore(db).list('big', { limit: PAGE }));
    await expectIndexedPage((db) => new RejectStore(db).list('big', { limit: PAGE, before: 5000 }));
  });
});

describe('DLQ failure groups', () => {
  it('read the per-day counts and time-bounded ranges of the envelopes, filtered or not', async () => {
    for (const filter of [{}, { errorCode: SEEDED_CODES.frequent }, { terminalReason: 'non_retryable' as const }, { errorCode: 'ABSENT_CODE' }]) {
      for (const { sql, nodes } of await plans((db) => new FailureGroupStore(db).groups('big', filter, 100))) {
        // Every read of the envelopes is bounded by time (a group's first or last day, the last hour).
        const unbounded = nodes
          .filter((n) => n['Relation Name'] === 'execution_dlq' && !(n['Index Cond'] ?? n['Recheck Cond'])?.includes('created_at'))
          .map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''}`);
        expect({ sql, seqScans: seqScansOfHistory(nodes), unbounded }).toEqual({ sql, seqScans: [], unbounded: [] });
      }
    }
    expect((await new FailureGroupStore(database.db).groups('big', {}, 100)).reduce((sum, g) => sum + g.count, 0)).toBe(
      Number((await database.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM execution_dlq WHERE tenant_id = 'big'`)).rows[0].n),
    );
  });
});

describe('triage and the metrics gauges', () => {
  it('never scan a history table', async () => {
    const reads = [
      (db: Db) => new SignalsStore(db).triage(15 * 60_000, 'big'),
      (db: Db) => new SignalsStore(db).triage(24 * 3_600_000),
      (db: Db) => Promise.all((['dlq', 'reject', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'] as const).map((s) => new SignalsStore(db).total(s))),
      (db: Db) => new SignalsStore(db).dlqUnpublished(),
      (db: Db) => new SignalsStore(db).topFingerprintShare(),
      (db: Db) => new SignalsStore(db).checkpointsPending(),
      (db: Db) => new SignalsStore(db).checkpointLagSeconds(),
      (db: Db) => new SignalsStore(db).waitingOnRetry(5),
    ];
    for (const read of reads) {
      for (const { sql, nodes } of await plans(read)) expect({ sql, seqScans: seqScansOfHistory(nodes) }).toEqual({ sql, seqScans: [] });
    }
  });

  it('count the seeded store exactly', async () => {
    const signals = new SignalsStore(database.db);
    const failed = Math.floor(19_800 / 33);
    expect(await signals.total('FAILED')).toBe(failed);
    expect(await signals.total('dlq')).toBe(failed);
    expect(await signals.total('reject')).toBe(10_000);
    expect(await signals.checkpointsPending()).toBe(5);
  });
});
