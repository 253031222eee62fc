/**
 * Counts kept where they are written (migration 20261126070000) stay exact under
 * concurrency: a bulk job's item counters (admissions, skips, admission failures, the ends of
 * the runs it admitted), the counts of executions pinned to each pipeline version, and each
 * failure group's first and last seen, written by many concurrent statements on the real
 * Postgres, equal a recount from the rows. A migration over rows written before the counters
 * existed fills them with the same recount.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DefinitionStore, type PinnedCount } from '../../src/store/definition-store';
import { FailureGroupStore } from '../../src/store/failure-group-store';
import { createPgDb, type Db } from '../../src/store/db';
import { listMigrations, migrate } from '../../src/store/migrate';
import { RedriveJobStore } from '../../src/store/redrive-job-store';
import { eachLimited } from '../../src/service/redrive-job-request';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { scaled } from '../helpers/time-scale';
import { agedFailure } from '../helpers/unreachable-states';
import { writers } from '../helpers/writers';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const byKey = (counts: PinnedCount[]) =>
  [...counts].sort((a, b) => `${a.pipeline}/${a.version}/${a.status}`.localeCompare(`${b.pipeline}/${b.version}/${b.status}`));

/** Every counted read equals its recount from the rows. */
async function expectCountsEqualRecounts(db: Db, tenantId: string, jobId?: string) {
  const definitions = new DefinitionStore(db);
  expect(byKey(await definitions.pinnedCounts(tenantId))).toEqual(byKey(await definitions.recountPinned(tenantId)));
  const groups = new FailureGroupStore(db);
  expect(await groups.groups(tenantId, {}, 100)).toEqual(await groups.groups(tenantId, { from: '1970-01-01T00:00:00Z' }, 100));
  if (jobId) {
    const jobs = new RedriveJobStore(db);
    expect(await jobs.counts(tenantId, jobId)).toEqual(await jobs.recount(tenantId, jobId));
  }
}

describe('counts kept where they are written', () => {
  it('stay exact through concurrent admissions, skips, admission failures, run endings, failures and single re-drives', async () => {
    // A pool as wide as the lanes, with a long wait: the machine is shared and loaded; what is proven is counts, not speed.
    const db = createPgDb(database.url, { max: 24, acquireTimeoutMs: scaled(60_000), idleTimeoutMs: 1000 });
    onTestFinished(() => db.close());
    const write = writers(db);
    const t = 't';
    const N = 150;
    const codes = ['HTTP_503', 'TIMEOUT', 'CONTRACT'];
    const pins = [
      { pipelineVersion: 1, definitionFingerprint: 'fa' },
      { pipelineVersion: 1, definitionFingerprint: 'fb' },
      { pipelineVersion: 2, definitionFingerprint: null },
    ];
    const ids = Array.from({ length: N }, (_, i) => `e${i}`);
    // Every execution fails once (FAILED with its envelope): the job's selection.
    await eachLimited(ids, 16, async (id, i) => {
      await write.created(t, id, 1, pins[i % pins.length]);
      await write.failed(t, id, codes[i % codes.length]);
    });
    const jobs = new RedriveJobStore(db);
    const versions = await db.query<{ execution_id: string; version: number }>(`SELECT execution_id, version FROM execution_record WHERE tenant_id = $1`, [t]);
    const jobId = 'job-1';
    await jobs.create({
      tenantId: t,
      jobId,
      principal: 'ops',
      reason: 'test',
      request: {},
      batchSize: 50,
      ratePerSecond: 100,
      canary: null,
      haltOn: {},
      selection: { items: versions.rows.map((row) => ({ executionId: row.execution_id, expectedVersion: row.version })), excluded: {} },
    });

    // What each item meets, all at once on 16 lanes, with writers outside the job in between.
    const plan = (i: number) =>
      (['skip', 'admissionFailed', 'succeeded', 'failedAgain', 'unknown', 'skip2', 'admissionFailed', 'succeeded', 'failedAgain', 'inFlight'] as const)[i % 10];
    const outsiders = Array.from({ length: 60 }, (_, i) => `o${i}`);
    const won: boolean[] = [];
    await Promise.all([
      eachLimited(ids, 16, async (id, i) => {
        const step = plan(i);
        if (step === 'skip' || step === 'skip2') {
          // Two skippers race: one skips it.
          const code = step === 'skip' ? 'VERSION_CONFLICT' : 'NOT_REDRIVABLE';
          const skipped = await Promise.all([jobs.skip(t, jobId, id, code), jobs.skip(t, jobId, id, code)]);
          expect(skipped.filter(Boolean)).toHaveLength(1);
          return;
        }
        if (step === 'admissionFailed') {
          // Seven attempts at once: the fifth skips it as ADMISSION_FAILED, the later ones find it skipped.
          const at = await Promise.all(Array.from({ length: 7 }, () => jobs.recordAdmissionFailure(t, jobId, id, 5)));
          expect(at.filter((a) => a?.skipped)).toHaveLength(1);
          return;
        }
        // Two admissions of the same item race: exactly one moves the record and the item.
        const admitted = await Promise.all([1, 2].map((n) => write.redriven(t, id, { jobId, redriveId: `${id}-${n}`, mustWin: false })));
        won.push(...admitted.filter(Boolean));
        expect(admitted.filter(Boolean)).toHaveLength(1);
        if (step === 'succeeded') await write.succeeded(t, id);
        else if (step === 'failedAgain') await write.failed(t, id, codes[(i + 1) % codes.length]);
        else if (step === 'unknown') await write.outcomeUnknown(t, id);
      }),
      eachLimited(outsiders, 4, async (id, i) => {
        await write.created(t, id, 1, pins[i % pins.length]);
        await write.failed(t, id, codes[i % codes.length]);
        if (i % 2 === 0) {
          await write.redriven(t, id);
          if (i % 4 === 0) await write.succeeded(t, id);
        }
      }),
    ]);

    const counts = await jobs.counts(t, jobId);
    const expected = (steps: string[]) => ids.filter((_, i) => steps.includes(plan(i))).length;
    expect(counts).toMatchObject({
      selected: N,
      remaining: 0,
      admitted: expected(['succeeded', 'failedAgain', 'unknown', 'inFlight']),
      skipped: expected(['skip', 'skip2', 'admissionFailed']),
      skippedByCode: { VERSION_CONFLICT: expected(['skip']), NOT_REDRIVABLE: expected(['skip2']), ADMISSION_FAILED: expected(['admissionFailed']) },
      succeeded: expected(['succeeded']),
      failedAgain: expected(['failedAgain']),
      remoteOutcomeUnknown: expected(['unknown']),
      running: expected(['inFlight']),
    });
    expect(won).toHaveLength(counts.admitted);
    await expectCountsEqualRecounts(db, t, jobId);
    // The version checks read counters and in-flight rows: fingerprint fa's records against any other shape of version 1.
    const direct = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM execution_record WHERE tenant_id = $1 AND pipeline = 'p' AND pipeline_version = 1 AND status <> 'SUCCEEDED' AND definition_fingerprint <> 'fa'`,
      [t],
    );
    expect(direct.rows[0].n).toBeGreaterThan(0);
    expect(await new DefinitionStore(db).pinnedToOtherShape('p', 1, 'fa', t)).toBe(direct.rows[0].n);
    expect(await new DefinitionStore(db).pinnedToOtherShape('p', 1, 'fa')).toBe(direct.rows[0].n);

    // The job list reads every listed job's counts in one statement: the same counts.
    expect((await jobs.countsOf(t, [jobId, 'no-such-job'])).get(jobId)).toEqual(counts);
  });

  it('a migration over rows written before the counters fills them with what a recount gives', async () => {
    const name = `pipeline_test_counts_${Date.now().toString(36)}`;
    const admin = createPgDb(database.url, { idleTimeoutMs: 1000 });
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(database.url);
    url.pathname = `/${name}`;
    const db = createPgDb(url.toString(), { idleTimeoutMs: 1000 });
    try {
      const all = listMigrations();
      const last = all.findIndex((m) => m.version === '20261126070000');
      await migrate(db, undefined, all.slice(0, last));
      // Before: failures over three days (two groups), a job with items in every state, one run of it in flight.
      for (const [i, age] of ['50 hours', '26 hours', '3 hours', '2 hours', '5 minutes', '1 minute'].entries()) {
        await agedFailure(db, {
          tenantId: 't',
          executionId: `f${i}`,
          groupId: i % 2 ? 'ga' : 'gb',
          terminalReason: 'retry_exhausted',
          errorCode: 'HTTP_503',
          age,
        });
      }
      await db.query(
        `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, pipeline_version)
         VALUES ('t', 'a-ok', 'p', 'a-ok', 'SUCCEEDED', 6, 2, 2, 2, 1), ('t', 'a-run', 'p', 'a-run', 'RUNNING', 5, 2, 1, 2, 2), ('t', 'a-bad', 'p', 'a-bad', 'FAILED', 6, 2, 1, 2, 2)`,
      );
      await db.query(
        `INSERT INTO redrive_job (tenant_id, job_id, status, principal, reason, request, batch_size, rate_per_second, selected) VALUES ('t', 'j', 'RUNNING', 'ops', 'why', '{}', 10, 5, 6)`,
      );
      await db.query(
        `INSERT INTO redrive_job_item (tenant_id, job_id, execution_id, ordinal, expected_version, state, skip_code, redrive_id, processed_at) VALUES
           ('t', 'j', 'a-ok', 0, 3, 'ADMITTED', NULL, 'r-ok', now() - interval '3 minutes'),
           ('t', 'j', 'a-run', 1, 3, 'ADMITTED', NULL, 'r-run', now() - interval '2 minutes'),
           ('t', 'j', 'a-bad', 2, 3, 'ADMITTED', NULL, 'r-bad', now() - interval '1 minute'),
           ('t', 'j', 'gone', 3, 3, 'ADMITTED', NULL, 'r-gone', now() - interval '4 minutes'),
           ('t', 'j', 's1', 4, 3, 'SKIPPED', 'VERSION_CONFLICT', NULL, now()),
           ('t', 'j', 's2', 5, 3, 'SELECTED', NULL, NULL, NULL)`,
      );
      await db.query(
        `INSERT INTO redrive_audit (tenant_id, execution_id, redrive_id, principal, reason, request, mode, from_status, from_version, to_version, resume_step_index, attempt, job_id)
         VALUES ('t', 'a-run', 'r-run', 'ops', 'why', '{}', 'FAILED', 'FAILED', 3, 4, 1, 2, 'j')`,
      );
      await migrate(db);

      const jobs = new RedriveJobStore(db);
      const counts = await jobs.counts('t', 'j');
      expect(counts).toMatchObject({
        selected: 6,
        remaining: 1,
        admitted: 4,
        skipped: 1,
        skippedByCode: { VERSION_CONFLICT: 1 },
        succeeded: 2,
        failedAgain: 1,
        running: 1,
      });
      await expectCountsEqualRecounts(db, 't', 'j');
      // The run in flight is the job's: its end counts in the job.
      expect((await db.query(`SELECT redrive_job_id FROM execution_record WHERE execution_id = 'a-run'`)).rows[0]).toEqual({ redrive_job_id: 'j' });
      await db.query(`UPDATE execution_record SET status = 'SUCCEEDED', version = version + 1 WHERE execution_id = 'a-run'`);
      expect((await jobs.counts('t', 'j')).succeeded).toBe(3);
      await expectCountsEqualRecounts(db, 't', 'j');
    } finally {
      await db.close();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    }
  });
});
