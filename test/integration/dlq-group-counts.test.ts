/**
 * DLQ failure groups read from the per-day counts the triggers keep answer exactly what a
 * scan of the unredriven envelopes answers (count, signature, first and last seen, the
 * last hour's buckets), through envelopes spread over days, re-drives of the oldest and the
 * newest envelope of a group, retention's deletes, and the terminalReason/errorCode filters.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailureGroupStore, type EnvelopeFilter } from '../../src/store/failure-group-store';
import type { TerminalReason } from '../../src/spec-words';
import { ExecutionStore } from '../../src/store/execution-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { agedFailure, deleteEnvelopesByHand } from '../helpers/unreachable-states';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const failed = (tenantId: string, executionId: string, groupId: string, terminalReason: TerminalReason, errorCode: string, age: string) =>
  agedFailure(database.db, { tenantId, executionId, groupId, terminalReason, errorCode, age });

/** The re-drive's own admission (version 3, FAILED, resume at step 1): the record leaves FAILED and its envelope counts as re-driven. */
async function redrive(executionId: string) {
  const admitted = await new ExecutionStore(database.db).admitRedrive({
    tenantId: 't',
    executionId,
    expectedVersion: 3,
    fromStatus: 'FAILED',
    fromPipelineVersion: 1,
    resumeStepIndex: 1,
    resumeStepName: 'charge',
    redriveId: `redrive-${executionId}`,
    principal: 'ops',
    reason: 'test',
    request: {},
    mode: 'FAILED',
    confirmedDisposition: null,
    dispatchSpec: {},
    releaseAmbiguousEffect: false,
    lease: { owner: 'test', ms: 60_000 },
  });
  expect(admitted).toMatchObject({ status: 'QUEUED', version: 4 });
}

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
    expect(groups.map((g) => [g.group_id, g.count])).toEqual([
      ['ga', 6],
      ['gb', 3],
    ]);
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
    await deleteEnvelopesByHand(database.db, 't', ['a0', 'b1', 'a3']);
    groups = await compare('t');
    expect(groups[0].count).toBe(3);
    expect(await compare('t', { terminalReason: 'retry_exhausted' })).toHaveLength(1);
    expect(await compare('t', { errorCode: 'CONTRACT' })).toEqual([]);
    expect((await compare('other'))[0].count).toBe(1);
  });
});
