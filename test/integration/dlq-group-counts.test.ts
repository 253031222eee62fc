/**
 * DLQ failure groups read from the per-day counts the triggers keep answer exactly what a
 * scan of the unredriven envelopes answers (count, signature, first and last seen, the
 * last hour's buckets), through envelopes spread over days, re-drives of the oldest and the
 * newest envelope of a group, retention's deletes, and the terminalReason/errorCode filters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureGroupStore, type EnvelopeFilter } from '../../src/store/failure-group-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** A FAILED execution at version 3 and its envelope in `group`, written `age` ago. */
async function failed(tenant: string, id: string, group: string, reason: string, code: string, age: string) {
  const db = database.db;
  await db.query(
    `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, failed_step_index, terminal_reason, last_error_code)
     VALUES ($1, $2, 'p', $2, 'FAILED', 3, 2, 1, 1, 1, $3, $4)`,
    [tenant, id, reason, code],
  );
  await db.query(
    `INSERT INTO execution_dlq (tenant_id, execution_id, transition_key, terminal_reason, error_code, record_version, envelope, created_at, group_id, signature)
     VALUES ($1, $2, $2 || ':1:1', $3, $4, 3, '{}', now() - $5::interval, $6, jsonb_build_object('step', 'charge', 'errorCode', $4::text, 'terminalReason', $3::text, 'transport', 'REST', 'message', 'm'))`,
    [tenant, id, reason, code, age, group],
  );
}
const redrive = (id: string) => database.db.query(`UPDATE execution_record SET status = 'QUEUED', version = version + 1 WHERE execution_id = $1`, [id]);

/** The same question through the scanning path (a from-filter that excludes nothing). */
async function compare(tenant: string, filter: EnvelopeFilter = {}) {
  const store = new FailureGroupStore(database.db);
  const counted = await store.groups(tenant, filter, 100);
  const scanned = await store.groups(tenant, { ...filter, from: '1970-01-01T00:00:00Z' }, 100);
  expect(counted).toEqual(scanned);
  return counted;
}

describe('failure groups from counts', () => {
  it('answer what a scan of the envelopes answers, through re-drives and deletes', async () => {
    const ages = ['50 hours', '30 hours', '26 hours', '3 hours', '25 minutes', '5 minutes'];
    for (const [i, age] of ages.entries()) await failed('t', `a${i}`, 'ga', 'retry_exhausted', 'HTTP_503', age);
    for (const [i, age] of ['2 hours', '40 minutes', '1 minute'].entries()) await failed('t', `b${i}`, 'gb', 'non_retryable', 'CONTRACT', age);
    await failed('other', 'o1', 'ga', 'retry_exhausted', 'HTTP_503', '1 minute');

    let groups = await compare('t');
    expect(groups.map((g) => [g.group_id, g.count])).toEqual([['ga', 6], ['gb', 3]]);
    expect(groups[0].buckets.reduce((a, b) => a + b, 0)).toBe(2);

    // Re-drive the oldest and the newest of ga: its first and last seen move, its count drops.
    await redrive('a0');
    await redrive('a5');
    groups = await compare('t');
    expect(groups.find((g) => g.group_id === 'ga')!.count).toBe(4);
    // Every envelope of gb re-driven: the group is gone.
    for (const id of ['b0', 'b1', 'b2']) await redrive(id);
    groups = await compare('t');
    expect(groups.map((g) => g.group_id)).toEqual(['ga']);
    // Retention deletes re-driven envelopes only; a deleted unredriven one (by hand) leaves its count.
    await database.db.query(`DELETE FROM execution_dlq WHERE execution_id IN ('a0', 'b1', 'a3')`);
    groups = await compare('t');
    expect(groups[0].count).toBe(3);
    expect(await compare('t', { terminalReason: 'retry_exhausted' })).toHaveLength(1);
    expect(await compare('t', { errorCode: 'CONTRACT' })).toEqual([]);
    expect((await compare('other'))[0].count).toBe(1);
  });
});
