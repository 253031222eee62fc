/**
 * A bulk job's rate is held by its gate on the store's clock (store/job-gate.ts: the job row's
 * lock and pacing composed onto the re-drive's own admission statement): two admissions of
 * one job are never closer than the job's spacing, however many lanes race, and a refused
 * admission changes nothing. Proven on the real Postgres by the stamps the statements wrote, never by
 * how long anything took.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createPgDb } from '../../src/store/db';
import { AdmissionTooSoonError, JobNotAdmittingError } from '../../src/store/job-gate';
import { RedriveJobStore } from '../../src/store/redrive-job-store';
import { eachLimited } from '../../src/service/redrive-job-request';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { scaled } from '../helpers/time-scale';
import { writers } from '../helpers/writers';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** `count` FAILED executions `prefix0…` selected by one RUNNING job. */
async function failedJob(db: ReturnType<typeof createPgDb>, jobId: string, count: number) {
  const write = writers(db);
  const ids = Array.from({ length: count }, (_, i) => `${jobId}-e${i}`);
  await eachLimited(ids, 8, async (id) => {
    await write.created('t', id);
    await write.failed('t', id, 'HTTP_503');
  });
  const versions = await db.query<{ execution_id: string; version: number }>(
    `SELECT execution_id, version FROM execution_record WHERE execution_id = ANY($1)`,
    [ids],
  );
  await new RedriveJobStore(db).create({
    tenantId: 't',
    jobId,
    principal: 'ops',
    reason: 'test',
    request: {},
    batchSize: count,
    ratePerSecond: 10,
    canary: null,
    haltOn: {},
    selection: { items: versions.rows.map((row) => ({ executionId: row.execution_id, expectedVersion: row.version })), excluded: {} },
  });
  return { write, ids };
}

describe("a bulk job's admission gate", () => {
  it('refuses an admission sooner than the spacing after the last one, or for a job not RUNNING, and the refusal changes nothing', async () => {
    const db = createPgDb(database.url, { max: 4 });
    onTestFinished(() => db.close());
    const { write, ids } = await failedJob(db, 'gate-1', 3);
    const hour = 3_600_000;
    expect(await write.redriven('t', ids[0], { jobId: 'gate-1', jobSpacingMs: hour })).toBe(true);
    const snapshot = async () => ({
      item: (
        await db.query(
          `SELECT r.status, r.version, i.state, i.processed_at,
                  (SELECT count(*)::int FROM redrive_audit a WHERE a.execution_id = r.execution_id) AS audits,
                  (SELECT count(*)::int FROM execution_dispatch d WHERE d.execution_id = r.execution_id) AS dispatches
             FROM execution_record r JOIN redrive_job_item i USING (tenant_id, execution_id) WHERE r.execution_id = $1`,
          [ids[1]],
        )
      ).rows[0],
      job: (await db.query(`SELECT status, next_admission_at FROM redrive_job WHERE job_id = 'gate-1'`)).rows[0],
      counts: await new RedriveJobStore(db).counts('t', 'gate-1'),
    });
    const before = await snapshot();
    expect(before.item).toMatchObject({ status: 'FAILED', state: 'SELECTED', processed_at: null, audits: 0 });
    expect(before.counts.admitted).toBe(1);
    const refusal = await write.redriven('t', ids[1], { jobId: 'gate-1', jobSpacingMs: hour }).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(AdmissionTooSoonError);
    // It says how long is left, never more than the spacing.
    expect((refusal as AdmissionTooSoonError).waitMs).toBeGreaterThan(0);
    expect((refusal as AdmissionTooSoonError).waitMs).toBeLessThanOrEqual(hour);
    expect(await snapshot()).toEqual(before);
    // A paused job admits nothing, whatever the spacing: the pause holds at the statement.
    await db.query(`UPDATE redrive_job SET status = 'PAUSED', next_admission_at = NULL WHERE job_id = 'gate-1'`);
    const paused = await snapshot();
    await expect(write.redriven('t', ids[2], { jobId: 'gate-1', jobSpacingMs: 1 })).rejects.toBeInstanceOf(JobNotAdmittingError);
    expect(await snapshot()).toEqual(paused);
    // Another job, and a re-drive of no job, are not held by this job's gate.
    const other = await failedJob(db, 'gate-2', 2);
    expect(await other.write.redriven('t', other.ids[0], { jobId: 'gate-2', jobSpacingMs: hour })).toBe(true);
    expect(await other.write.redriven('t', other.ids[1])).toBe(true);
  });

  it('lets exactly one of many lanes racing in one spacing through; the others change nothing', async () => {
    const lanes = 8;
    const db = createPgDb(database.url, { max: lanes, acquireTimeoutMs: scaled(60_000), idleTimeoutMs: 1000 });
    onTestFinished(() => db.close());
    const { write, ids } = await failedJob(db, 'gate-3', lanes);
    const outcomes = await Promise.all(
      ids.map((id) =>
        write.redriven('t', id, { jobId: 'gate-3', jobSpacingMs: 3_600_000 }).then(
          () => 'admitted',
          (err: unknown) => (err instanceof AdmissionTooSoonError ? 'too soon' : err),
        ),
      ),
    );
    expect(outcomes.filter((o) => o === 'admitted')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'too soon')).toHaveLength(lanes - 1);
    const rows = await db.query(`SELECT state, count(*)::int AS n FROM redrive_job_item WHERE job_id = 'gate-3' GROUP BY 1 ORDER BY 1`);
    expect(rows.rows).toEqual([
      { state: 'ADMITTED', n: 1 },
      { state: 'SELECTED', n: lanes - 1 },
    ]);
    expect((await db.query(`SELECT count(*)::int AS n FROM redrive_audit WHERE job_id = 'gate-3'`)).rows[0].n).toBe(1);
  });

  it('paces the admissions of lanes that wait out the refusals at the cell rate, on the stamps the statements wrote', async () => {
    const lanes = 8;
    const db = createPgDb(database.url, { max: lanes, acquireTimeoutMs: scaled(60_000), idleTimeoutMs: 1000 });
    onTestFinished(() => db.close());
    const { write, ids } = await failedJob(db, 'gate-4', 16);
    const spacingMs = 40;
    await eachLimited(ids, lanes, async (id) => {
      for (;;) {
        try {
          expect(await write.redriven('t', id, { jobId: 'gate-4', jobSpacingMs: spacingMs })).toBe(true);
          return;
        } catch (err) {
          if (!(err instanceof AdmissionTooSoonError)) throw err;
          await new Promise((resolve) => setTimeout(resolve, err.waitMs));
        }
      }
    });
    const stamps = await db.query<{ at: string }>(
      `SELECT (extract(epoch FROM processed_at) * 1000000)::bigint::text AS at FROM redrive_job_item
        WHERE job_id = 'gate-4' AND state = 'ADMITTED' ORDER BY processed_at`,
    );
    expect(stamps.rows).toHaveLength(ids.length);
    const ms = stamps.rows.map((row) => Number(BigInt(row.at)) / 1000);
    // The cell rate: admissions i < j are at least (j - i - 1/2) spacings apart, so no two
    // closer than half a spacing, and no 1 s window holds more than the rate + 1.
    for (let i = 0; i < ms.length; i++)
      for (let j = i + 1; j < ms.length; j++) expect(ms[j] - ms[i], `admissions ${i} and ${j}`).toBeGreaterThanOrEqual((j - i - 0.5) * spacingMs);
    // The audit table is the same record of the ceiling: each admission's audit row has its item's gate time.
    const audited = await db.query<{ n: number; same: number }>(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE a.created_at = i.processed_at)::int AS same
       FROM redrive_job_item i JOIN redrive_audit a ON a.tenant_id = i.tenant_id AND a.redrive_id = i.redrive_id
       WHERE i.job_id = 'gate-4'`,
    );
    expect(audited.rows[0]).toEqual({ n: ids.length, same: ids.length });
    const jobs = new RedriveJobStore(db);
    expect(await jobs.counts('t', 'gate-4')).toEqual(await jobs.recount('t', 'gate-4'));
    // The next admission is at least a spacing after the last one.
    const next = await db.query(
      `SELECT next_admission_at >= (SELECT max(processed_at) FROM redrive_job_item WHERE job_id = 'gate-4') + interval '${spacingMs} milliseconds' AS ahead
         FROM redrive_job WHERE job_id = 'gate-4'`,
    );
    expect(next.rows[0]).toEqual({ ahead: true });
  });
});
