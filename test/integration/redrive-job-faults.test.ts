/**
 * A bulk re-drive job never stays RUNNING without progress (issue 19 part 3), against the
 * real dev server and Postgres, with faults injected in the database itself (a trigger that
 * raises, as a bug or a broken constraint would):
 * - an item whose admission keeps failing for a reason that is not a refusal is tried
 *   MAX_ADMISSION_ATTEMPTS times, then skipped as ADMISSION_FAILED; the job completes;
 * - a job whose tick keeps failing ends FAILED after its bounded retry, with the reason in
 *   the API, the CLI's line and Temporal;
 * - the halted / paused / stuck gauge and the item outcome counter;
 * - a job yielding to live traffic backs off while its admissions are slow (a statement that
 *   stalls), says so in its view, and still admits every item once.
 */
import { WorkflowFailedError, type ApplicationFailure } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobLine } from '../../src/cli/commands/read';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { MAX_ADMISSION_ATTEMPTS, RedriveJobTicks } from '../../src/service/redrive-job-ticks';
import { createPgDb } from '../../src/store/db';
import { SignalsStore } from '../../src/store/signals-store';
import { DEFAULT_HALT_ON } from '../../src/contract/requests';
import { REDRIVE_JOB_FAILED, redriveJobWorkflow } from '../../src/workflows/redrive-job-workflow';
import { ownRedrive, startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

let engine: TestEngine;
const healthy = new Set<string>();
/** executions whose re-driven step waits until released */
const held = new Set<string>();
const RATED = Array.from({ length: 16 }, (_, i) => `r-${i + 1}`);
const YIELDED = Array.from({ length: 30 }, (_, i) => `y-${i + 1}`);
const TWICE = Array.from({ length: 12 }, (_, i) => `d-${i + 1}`);
const IDS = ['f-1', 'f-2', 'f-3', 'f-4', 'f-5', 'h-1', 'h-2', ...RATED, ...YIELDED, ...TWICE];

beforeAll(async () => {
  engine = await startTestEngine(
    [
      definePipeline({
        name: 'book',
        steps: [
          localStep(
            'ledger',
            async (input: unknown, ctx) => {
              while (held.has(ctx.executionId) && !ctx.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
              if (!healthy.has(ctx.executionId)) throw Object.assign(new Error('ledger down'), { code: 'LEDGER_DOWN' });
              return input;
            },
            { retry: { limit: 0 } },
          ),
        ],
      }),
    ],
    // Jobs here yield to live traffic (off by default): the yield test needs it, and the others hold with it.
    { 'pipeline.redrive-job.yield-to-live': true },
  );
  for (const executionId of IDS) await engine.start('acme', { pipeline: 'book', executionId, input: {} });
  for (const executionId of IDS) await engine.waitFor('acme', executionId, ['FAILED']);
  for (const id of IDS) healthy.add(id);
}, scaled(180_000));
afterAll(async () => engine?.stop());

async function json(res: Response, status: number) {
  const body = await res.json();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
const job = async (jobId: string) => json(await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`), 200);
const sql = (text: string, params: unknown[] = []) => engine.service.db.query(text, params);
async function scrape(): Promise<string> {
  return (await engine.service.app.request('/metrics')).text();
}
const sample = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** A job row over `executionIds` as the API writes it, without its workflow: each test starts (or withholds) that itself. */
async function jobRow(executionIds: string[], reason: string) {
  const selection = await engine.service.jobs.store.selectByIds('acme', executionIds);
  const request = { selection: { executionIds }, reason, allowFailed: true, batchSize: 50, ratePerSecond: 10, haltOn: DEFAULT_HALT_ON };
  return { tenantId: 'acme', principal: 'test-admin', reason, request, batchSize: 50, ratePerSecond: 10, canary: null, haltOn: DEFAULT_HALT_ON, selection };
}

describe('a bulk job item or tick that keeps failing', () => {
  it(
    `skips an item whose admission fails ${MAX_ADMISSION_ATTEMPTS} times as ADMISSION_FAILED, re-drives the rest once, and completes`,
    { timeout: scaled(240_000) },
    async () => {
      // Admission of f-2 fails inside the admission statement itself: not a refusal, not an outage.
      await sql(`CREATE FUNCTION fault_f2() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected fault'; END $$`);
      await sql(`CREATE TRIGGER fault_f2 BEFORE INSERT ON redrive_audit FOR EACH ROW WHEN (NEW.execution_id = 'f-2') EXECUTE FUNCTION fault_f2()`);
      const before = await scrape();
      const created = await json(
        await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
          body: { selection: { executionIds: ['f-1', 'f-2', 'f-3'] }, reason: 'ledger back', allowFailed: true, ratePerSecond: 50 },
        }),
        202,
      );
      // The job runs on its own task queue, not behind the pipeline's runs.
      expect((await engine.service.client.workflow.getHandle(created.workflowId).describe()).taskQueue).toBe(`${engine.taskQueue}-redrive-jobs`);
      await until(async () => (await job(created.jobId)).status === 'COMPLETED', 180_000, 'the job to complete');
      const done = await job(created.jobId);
      expect(done.counts).toMatchObject({ selected: 3, processed: 3, remaining: 0, admitted: 2, skipped: 1, skippedByCode: { ADMISSION_FAILED: 1 } });
      expect(jobLine(done)).toContain('COMPLETED');

      const items = await sql(`SELECT execution_id, state, skip_code, admission_attempts FROM redrive_job_item WHERE job_id = $1 ORDER BY ordinal`, [
        created.jobId,
      ]);
      expect(items.rows).toEqual([
        { execution_id: 'f-1', state: 'ADMITTED', skip_code: null, admission_attempts: 0 },
        { execution_id: 'f-2', state: 'SKIPPED', skip_code: 'ADMISSION_FAILED', admission_attempts: MAX_ADMISSION_ATTEMPTS },
        { execution_id: 'f-3', state: 'ADMITTED', skip_code: null, admission_attempts: 0 },
      ]);
      const audit = await sql(`SELECT execution_id, count(*)::int AS n FROM redrive_audit WHERE job_id = $1 GROUP BY 1 ORDER BY 1`, [created.jobId]);
      expect(audit.rows).toEqual([
        { execution_id: 'f-1', n: 1 },
        { execution_id: 'f-3', n: 1 },
      ]);
      const logged = engine.logs.filter((l) => l.jobId === created.jobId && l.executionId === 'f-2');
      expect(logged.filter((l) => l.event === 'redrive_job_item_deferred')).toHaveLength(MAX_ADMISSION_ATTEMPTS - 1);
      expect(logged.filter((l) => l.event === 'redrive_job_item_skipped').map((l) => [l.code, l.attempts])).toEqual([
        ['ADMISSION_FAILED', MAX_ADMISSION_ATTEMPTS],
      ]);

      const after = await scrape();
      const delta = (outcome: string) =>
        sample(after, `pipeline_redrive_job_items_total{outcome="${outcome}"}`) - sample(before, `pipeline_redrive_job_items_total{outcome="${outcome}"}`);
      expect([delta('admitted'), delta('skipped'), delta('deferred'), delta('admission_failed')]).toEqual([2, 0, MAX_ADMISSION_ATTEMPTS - 1, 1]);
      await sql(`DROP TRIGGER fault_f2 ON redrive_audit`);
    },
  );

  it('ends a job FAILED when its tick keeps failing, with the reason in the API, the CLI line and Temporal', { timeout: scaled(180_000) }, async () => {
    // Every write to this job's items fails: the tick cannot admit, nor record the failure.
    await sql(`CREATE FUNCTION fault_job() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'items of this job are read-only'; END $$`);
    await sql(`CREATE TRIGGER fault_job BEFORE UPDATE ON redrive_job_item FOR EACH ROW WHEN (NEW.job_id = 'failing-job') EXECUTE FUNCTION fault_job()`);
    const jobs = engine.service.jobs;
    await jobs.store.create({ ...(await jobRow(['f-4'], 'doomed')), jobId: 'failing-job' });
    // Started as the API does, with a lower attempt limit so the test need not wait 5 minutes of backoff.
    const handle = await engine.service.client.workflow.start(redriveJobWorkflow, {
      workflowId: 'redrive-job/acme/failing-job',
      taskQueue: engine.taskQueue,
      args: [{ tenantId: 'acme', jobId: 'failing-job', limits: { activityAttempts: 3 } }],
    });
    await jobs.store.markStarted('acme', 'failing-job');
    const error = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const failure = (error as WorkflowFailedError).cause as ApplicationFailure;
    expect(failure.type).toBe(REDRIVE_JOB_FAILED);
    expect(failure.message).toBe(`the job's tick activity failed 3 times; last: items of this job are read-only`);

    const failed = await job('failing-job');
    expect(failed).toMatchObject({ status: 'FAILED', failureReason: failure.message, haltReason: null, etaSeconds: 0, finishedAt: expect.any(String) });
    expect(failed.controlLog.at(-1)).toMatchObject({ action: 'fail', principal: 'system', reason: failure.message });
    expect(failed.counts).toMatchObject({ remaining: 1, admitted: 0 });
    expect(jobLine(failed)).toContain(`FAILED (failed: ${failure.message})`);
    expect(engine.logs.filter((l) => l.event === 'redrive_job_failed' && l.jobId === 'failing-job')).toHaveLength(1);
    // A FAILED job is finished: control answers 409 JOB_FINISHED.
    const resume = await engine.request('POST', '/admin/tenants/acme/redrive-jobs/failing-job/resume');
    expect([resume.status, (await resume.json()).code]).toEqual([409, 'JOB_FINISHED']);
    await sql(`DROP TRIGGER fault_job ON redrive_job_item`);
  });

  it('says when it is held back by batchSize: "waiting for room"', async () => {
    held.add('h-1');
    const created = await json(
      await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
        body: { selection: { executionIds: ['h-1', 'h-2'] }, reason: 'one at a time', allowFailed: true, batchSize: 1 },
      }),
      202,
    );
    await until(async () => (await job(created.jobId)).counts.running === 1, 60_000, 'the first item to be running');
    const waiting = await job(created.jobId);
    expect(waiting).toMatchObject({
      status: 'RUNNING',
      counts: { admitted: 1, remaining: 1 },
      heldBack: 'waiting for room: 1 re-driven runs still running (batchSize 1)',
    });
    expect(jobLine(waiting)).toContain('(waiting for room: 1 re-driven runs still running (batchSize 1))');
    held.delete('h-1');
    await until(async () => (await job(created.jobId)).status === 'COMPLETED', 60_000, 'the job to complete');
    expect((await job(created.jobId)).heldBack).toBeNull();
  });

  it('refuses a canary that is not smaller than the selection (400, naming canary), in the dry run too, and creates nothing', async () => {
    const before = (await sql(`SELECT count(*)::int AS n FROM redrive_job`)).rows[0].n;
    for (const path of ['/admin/tenants/acme/redrive-jobs?dryRun=true', '/admin/tenants/acme/redrive-jobs']) {
      const res = await engine.request('POST', path, {
        body: { selection: { executionIds: ['f-1', 'f-3'] }, reason: 'all canary', allowFailed: true, canary: 2 },
      });
      const body = await res.json();
      expect([res.status, body.code, body.issues?.[0]?.path], path).toEqual([400, 'VALIDATION_FAILED', 'canary']);
      expect(body.detail).toBe('canary (2) must be smaller than the selection (2 executions): a canary is a first few items');
    }
    expect((await sql(`SELECT count(*)::int AS n FROM redrive_job`)).rows[0].n).toBe(before);
  });

  it(
    'holds the rate as a ceiling: no 1 s window of admissions (audit rows) above the asked rate + 1, even after a slow admission',
    { timeout: scaled(180_000) },
    async () => {
      // One admission stalls 2 s inside its statement: a job paced from an origin would then catch up in a burst.
      await sql(`CREATE FUNCTION slow_r4() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(2); RETURN NEW; END $$`);
      await sql(`CREATE TRIGGER slow_r4 BEFORE INSERT ON redrive_audit FOR EACH ROW WHEN (NEW.execution_id = 'r-4') EXECUTE FUNCTION slow_r4()`);
      // r-9 already succeeded: refused (skipped), it takes no slot.
      await sql(`UPDATE execution_record SET status = 'SUCCEEDED' WHERE tenant_id = 'acme' AND execution_id = 'r-9'`);
      const rate = 2;
      const created = await json(
        await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
          body: { selection: { executionIds: RATED }, reason: 'paced', allowFailed: true, ratePerSecond: rate, batchSize: 100 },
        }),
        202,
      );
      await until(async () => (await job(created.jobId)).status === 'COMPLETED', 120_000, 'the job to complete');
      const done = await job(created.jobId);
      expect(done.counts).toMatchObject({ admitted: RATED.length - 1, skippedByCode: { EXECUTION_SUCCEEDED: 1 } });
      const at = (await sql(`SELECT created_at FROM redrive_audit WHERE job_id = $1 ORDER BY created_at`, [created.jobId])).rows.map((r: any) =>
        new Date(r.created_at).getTime(),
      );
      expect(at).toHaveLength(RATED.length - 1);
      // The busiest 1 s window, starting at each admission.
      const peak = Math.max(...at.map((start) => at.filter((t) => t >= start && t < start + 1000).length));
      expect(peak).toBeLessThanOrEqual(rate + 1);
      await sql(`DROP TRIGGER slow_r4 ON redrive_audit`);
    },
  );

  it(
    'holds the ceiling when the process stalls mid-tick (as a SIGSTOP would): the admissions whose slots came meanwhile are spaced by the gate, not let through at once',
    { timeout: scaled(180_000) },
    async () => {
      const rate = 2;
      const row = await jobRow(TWICE, 'stalled');
      await engine.service.jobs.store.create({ ...row, request: { ...row.request, ratePerSecond: rate }, ratePerSecond: rate, jobId: 'stalled-job' });
      // The tick as the job's activity runs it, on a pool of its own, with four lanes: once
      // each lane has checked its item, it waits for its slot (1/rate apart, on this process's clock).
      const db = createPgDb(engine.database.url, { max: 4 });
      try {
        const { stores, redrive, log } = ownRedrive(engine, db);
        const ticks = new RedriveJobTicks(stores.jobs, redrive, log, undefined, 4);
        const tick = ticks.admitDue('acme', 'stalled-job', TWICE.length);
        await until(async () => (await stores.jobs.counts('acme', 'stalled-job')).admitted >= 2, 60_000, 'the first two admissions');
        // The whole process stops for 3 s (its event loop blocked, as SIGSTOP would): every slot a lane waits for passes meanwhile.
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000);
        await tick;
        for (let round = 0; (await stores.jobs.counts('acme', 'stalled-job')).admitted < TWICE.length; round++) {
          expect(round, 'further ticks').toBeLessThan(10);
          await ticks.admitDue('acme', 'stalled-job', TWICE.length);
        }
      } finally {
        await db.close();
      }
      const at = (await sql(`SELECT created_at FROM redrive_audit WHERE job_id = 'stalled-job' ORDER BY created_at`)).rows.map((r: any) =>
        new Date(r.created_at).getTime(),
      );
      expect(at).toHaveLength(TWICE.length);
      // Paced on the process's clock alone, the lanes woke together and admitted at once (4 and more in a second here).
      const peak = Math.max(...at.map((start) => at.filter((t) => t >= start && t < start + 1000).length));
      expect(peak).toBeLessThanOrEqual(rate + 1);
    },
  );

  it(
    'yields to live traffic: backs off while its admissions take more than twice its quietest, says so in rate.current and heldBack, and admits every item once',
    { timeout: scaled(300_000) },
    async () => {
      const rate = 20;
      const created = await json(
        await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
          body: { selection: { executionIds: YIELDED }, reason: 'yield', allowFailed: true, ratePerSecond: rate, batchSize: 100 },
        }),
        202,
      );
      // Its first admissions, unhindered, teach it its quietest.
      await until(async () => (await job(created.jobId)).counts.admitted >= 4, 60_000, 'the first admissions');
      // From here every admission stalls inside its statement, far longer than any unhindered one
      // on this machine (the stall stretches with the machine's time scale, as admissions do).
      const stallMs = scaled(1000);
      await sql(`CREATE FUNCTION slow_y() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(${stallMs / 1000}); RETURN NEW; END $$`);
      await sql(`CREATE TRIGGER slow_y BEFORE INSERT ON redrive_audit FOR EACH ROW WHEN (NEW.execution_id LIKE 'y-%') EXECUTE FUNCTION slow_y()`);
      try {
        // Until what it steers by is what the stall made of its admissions (it may have backed off
        // before, on a quieter machine's own jitter: that is yielding too, but not this test's cause).
        let slowed: any;
        let yielding: { latestMs: number; quietestMs: number } | null = null;
        await until(
          async () => {
            slowed = await job(created.jobId);
            yielding = (await sql(`SELECT yielding FROM redrive_job WHERE job_id = $1`, [created.jobId])).rows[0].yielding as typeof yielding;
            return slowed.status !== 'RUNNING' || (/backs off/.test(slowed.heldBack ?? '') && (yielding?.latestMs ?? 0) >= stallMs);
          },
          120_000,
          'the job to back off on its stalled admissions',
        );
        expect(slowed.status).toBe('RUNNING');
        expect(slowed.rate.current).toBeLessThan(rate);
        expect(slowed.heldBack).toMatch(
          new RegExp(
            `^yielding to live traffic: at most ${slowed.rate.current}/s of the ${rate}/s asked: its admissions take \\d+ ms, over 2× its quietest \\(\\d+ ms\\), so it backs off`,
          ),
        );
        expect(yielding!.latestMs).toBeGreaterThan(2 * yielding!.quietestMs);
        expect(jobLine(slowed)).toContain('(yielding to live traffic: at most');
      } finally {
        await sql(`DROP TRIGGER slow_y ON redrive_audit`);
      }
      await until(async () => (await job(created.jobId)).status === 'COMPLETED', 180_000, 'the job to complete');
      const done = await job(created.jobId);
      expect(done.counts).toMatchObject({ admitted: YIELDED.length, skipped: 0 });
      expect([done.rate.current, done.heldBack]).toEqual([rate, null]);
      // Each item admitted once: one audit row per execution.
      const audit = await sql(`SELECT execution_id, count(*)::int AS n FROM redrive_audit WHERE job_id = $1 GROUP BY 1`, [created.jobId]);
      expect(audit.rows).toHaveLength(YIELDED.length);
      expect(audit.rows.every((row: any) => row.n === 1)).toBe(true);
    },
  );

  it('counts halted, paused and stuck jobs in a gauge read from the store', async () => {
    const signals = new SignalsStore(engine.service.db);
    const base = await signals.redriveJobsNeedingAttention(0);
    // A job with its items and no workflow yet: RUNNING, items left, none processed — stuck at once for a 0 ms threshold, not for 15 minutes.
    const common = await jobRow(['f-5'], 'still');
    await engine.service.jobs.store.create({ ...common, jobId: 'stuck-job' });
    await engine.service.jobs.store.create({ ...common, jobId: 'paused-job' });
    await engine.service.jobs.store.create({ ...common, jobId: 'halted-job' });
    const entry = { action: 'pause' as const, principal: 'test-admin', at: new Date().toISOString() };
    await engine.service.jobs.store.transition({ tenantId: 'acme', jobId: 'paused-job', from: ['RUNNING'], to: 'PAUSED', entry, haltReason: null });
    await engine.service.jobs.store.transition({ tenantId: 'acme', jobId: 'halted-job', from: ['RUNNING'], to: 'PAUSED', entry, haltReason: 'canary' });
    await sql(`SELECT pg_sleep(0.01)`);
    expect(await signals.redriveJobsNeedingAttention(0)).toEqual({ halted: base.halted + 1, paused: base.paused + 1, stuck: base.stuck + 1 });
    // At the real threshold (15 minutes) a job created just now is not stuck; the scrape says so.
    const scraped = await scrape();
    expect(sample(scraped, 'pipeline_redrive_jobs{state="halted"}')).toBe(1);
    expect(sample(scraped, 'pipeline_redrive_jobs{state="paused"}')).toBe(1);
    expect(sample(scraped, 'pipeline_redrive_jobs{state="stuck"}')).toBe(0);
    for (const jobId of ['stuck-job', 'paused-job', 'halted-job'])
      await engine.service.jobs.store.transition({ tenantId: 'acme', jobId, from: ['RUNNING', 'PAUSED'], to: 'ABORTED', entry: null, haltReason: null });
  });
});
