/**
 * The signal counters follow every writer: triggers keep `signal_total` equal to what the
 * tables hold and `signal_minute` equal to the events of each minute, on Postgres and on
 * PGlite, through the engine's own commits (created, FAILED with its envelope, outcome
 * unknown, SUCCEEDED with item rejects, re-driven), an operator's deletes by hand and
 * concurrent commits; a rebuild from the rows gives the same counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { failureGroup } from '../../src/dlq/failure-group';
import { createPgliteDb, type Db } from '../../src/store/db';
import { migrate } from '../../src/store/migrate';
import { SignalsStore } from '../../src/store/signals-store';
import { createLog } from '../../src/log';
import { Retention } from '../../src/service/retention';
import { FailureGroupStore } from '../../src/store/failure-group-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { deleteEnvelopesByHand, deleteRecordBehindTheEngine, deleteRejectsByHand } from '../helpers/unreachable-states';
import { writers } from '../helpers/writers';

let database: TestDatabase;
let lite: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  lite = await createPgliteDb('memory://signals');
  await migrate(lite);
});
afterAll(async () => {
  await lite?.close();
  await database?.drop();
});

async function totals(signals: SignalsStore) {
  return {
    dlq: await signals.total('dlq'),
    reject: await signals.total('reject'),
    failed: await signals.total('FAILED'),
    unknown: await signals.total('REMOTE_OUTCOME_UNKNOWN'),
  };
}

describe.each([
  ['postgres', () => database.db],
  ['pglite', () => lite],
])('signal counters on %s', (_kind, dbOf) => {
  it('count what the tables hold and what each window saw, through inserts, status changes and deletes', async () => {
    const db = dbOf();
    const signals = new SignalsStore(db);
    const write = writers(db);
    for (const id of ['e1', 'e2', 'e3', 'e4']) await write.created('t1', id);
    await write.created('t2', 'x1');
    await write.failed('t1', 'e1', 'TIMEOUT');
    await write.failed('t1', 'e2', 'CONTRACT', 'non_retryable');
    await write.failed('t2', 'x1', 'CONTRACT', 'non_retryable');
    await write.outcomeUnknown('t1', 'e3');
    await write.succeeded('t1', 'e4', ['fa', 'fa', 'fb']);
    expect(await totals(signals)).toEqual({ dlq: 3, reject: 3, failed: 3, unknown: 1 });

    const t1 = await signals.triage(15 * 60_000, 't1');
    expect(t1).toMatchObject({
      executionDlq: { current: 2, previous: 0 },
      itemRejects: { current: 3, previous: 0 },
      executionsSucceeded: { current: 1, previous: 0 },
      topFingerprint: { fingerprint: 'fa', n: 2, total: 3 },
    });
    expect(t1.dominantDlq).toEqual({ errorCode: 'CONTRACT', terminalReason: 'non_retryable', envelopes: 1 });
    expect((await signals.triage(15 * 60_000)).dominantDlq).toEqual({ errorCode: 'CONTRACT', terminalReason: 'non_retryable', envelopes: 2 });
    expect(await signals.topFingerprintShare()).toBeCloseTo(2 / 3);

    // A re-drive moves e1 out of FAILED and e3 out of REMOTE_OUTCOME_UNKNOWN; an operator deletes
    // by hand an unredriven envelope, a reject and a FAILED record of another tenant (retention's
    // own deletes are counted in retention.test.ts).
    await write.redriven('t1', 'e1');
    await write.redriven('t1', 'e3');
    await deleteEnvelopesByHand(db, 't1', ['e2']);
    await deleteRejectsByHand(db, 't1', 'fb');
    await deleteRecordBehindTheEngine(db, 't2', 'x1');
    expect(await totals(signals)).toEqual({ dlq: 2, reject: 2, failed: 1, unknown: 0 });
    // The per-minute events stay: the window still saw 2 envelopes of t1.
    expect((await signals.triage(15 * 60_000, 't1')).executionDlq).toEqual({ current: 2, previous: 0 });

    const before = await db.query('SELECT tenant_id, signal, sum(n)::int AS n FROM signal_total GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2');
    const minutes = await db.query('SELECT tenant_id, signal, key, detail, sum(n)::int AS n FROM signal_minute GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4');
    await signals.rebuild();
    expect((await db.query('SELECT tenant_id, signal, sum(n)::int AS n FROM signal_total GROUP BY 1, 2 HAVING sum(n) <> 0 ORDER BY 1, 2')).rows).toEqual(
      before.rows,
    );
    // A rebuild counts the envelopes and rejects still held (retention removed one of each).
    const rebuilt = await db.query('SELECT tenant_id, signal, key, detail, sum(n)::int AS n FROM signal_minute GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4');
    expect(rebuilt.rows).toEqual(minutes.rows.filter((r: any) => !(r.key === 'CONTRACT' && r.tenant_id === 't1') && r.key !== 'fb'));
  });
});

describe('signal counters under concurrent commits', () => {
  it('add up exactly when 40 executions of one tenant commit rejects and envelopes at once', async () => {
    const db = database.db;
    const signals = new SignalsStore(db);
    const write = writers(db);
    const before = await totals(signals);
    const startedAt = Date.now();
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await write.created('busy', `c${i}`, 2);
        await write.succeeded('busy', `c${i}`, ['same', 'same', `other-${i % 3}`]);
        await write.failed('busy', `c${i}`, 'TIMEOUT');
      }),
    );
    expect(await totals(signals)).toEqual({ ...before, dlq: before.dlq + 40, reject: before.reject + 120, failed: before.failed + 40 });
    // Triage counts whole minutes (the current one and those before it): a window that reaches back
    // past this test's start holds every minute its commits landed in, even when they crossed one
    // (a 1-minute window is the current minute alone: a loaded run that crossed it read null).
    const window = Date.now() - startedAt + 60_000;
    expect((await signals.triage(window, 'busy')).topFingerprint).toEqual({ fingerprint: 'same', n: 80, total: 120 });
  });
});

describe('the embedded store (PGlite)', () => {
  it('runs the retention pass and the failure-group counts', async () => {
    const write = writers(lite);
    await write.created('g', 'gf');
    await write.failed('g', 'gf', 'TIMEOUT');
    const group = failureGroup({ step: 's', errorCode: 'TIMEOUT', terminalReason: 'retry_exhausted', transport: 'LOCAL', errorMessage: 'refused' });
    const groups = await new FailureGroupStore(lite).groups('g', {}, 10);
    expect(groups.map((g) => [g.group_id, g.count, g.signature])).toEqual([[group.groupId, 1, group.signature]]);
    await write.redriven('g', 'gf');
    expect(await new FailureGroupStore(lite).groups('g', {}, 10)).toEqual([]);
    await write.succeeded('g', 'gf');
    const zero = {
      succeededExecutionsMs: 0,
      dlqMs: 0,
      redriveAuditMs: 0,
      rejectsMs: 0,
      checkpointsMs: 0,
      dispatchMs: 0,
      dedupeMs: 0,
      batchSize: 100,
      dutyCycle: 0.5,
    };
    const deleted = await new Retention(lite, zero, createLog({ level: 'silent' })).pass();
    // Everything re-driven or succeeded in this database goes (gf's, and e1's from the test above).
    expect(deleted).toMatchObject({ execution_record: 2, execution_dlq: 2, transition_worker_dedupe: 0 });
    expect((await lite.query(`SELECT 1 FROM execution_record WHERE execution_id = 'gf'`)).rowCount).toBe(0);
    expect((await lite.query(`SELECT 1 FROM execution_dlq WHERE execution_id IN ('gf', 'e1')`)).rowCount).toBe(0);
  });
});
