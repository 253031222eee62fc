/**
 * Bulk re-drive jobs against the real dev server and Postgres: 300 executions failed by one
 * dependency in two ways make two failure groups; a job over one group re-drives each of
 * its executions exactly once (counted in the audit table and in Temporal runs) and leaves
 * the other group and every DLQ envelope alone; a dry run's counts are what the job then
 * does; a canary whose items fail again halts the job, and resume finishes it.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { ownRedrive, startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { createLog } from '../../src/log';
import { RedriveJobs } from '../../src/service/redrive-jobs';
import { RedriveJobRequest } from '../../src/contract/requests';
import { createPgDb } from '../../src/store/db';
import { DEFAULT_HALT_ON } from '../../src/contract/requests';
import { scaled } from '../helpers/time-scale';

let engine: TestEngine;
/** executions whose ledger call works again */
const healthy = new Set<string>();
/** every ledger call, per execution: a re-drive is one more */
const ledgerCalls = new Map<string, number>();

const ledger = localStep(
  'ledger',
  (input: { way: 'refused' | 'timeout'; n: number }, ctx) => {
    ledgerCalls.set(ctx.executionId, (ledgerCalls.get(ctx.executionId) ?? 0) + 1);
    if (healthy.has(ctx.executionId)) return { booked: input.n };
    if (input.way === 'refused') throw Object.assign(new Error(`connect ECONNREFUSED 10.0.0.${input.n % 250}:5432`), { code: 'LEDGER_DOWN' });
    throw Object.assign(new Error(`ledger call timed out after ${1000 + input.n} ms`), { code: 'LEDGER_DOWN' });
  },
  { retry: { limit: 0 } },
);

const pipelines = [
  definePipeline({ name: 'book', steps: [localStep('prepare', (input: unknown) => input), ledger] }),
  definePipeline({ name: 'ok', steps: [localStep('only', (input: unknown) => input)] }),
];

const REFUSED = 180;
const TIMEOUT = 120;
const idsOf = (way: string, count: number) => Array.from({ length: count }, (_, i) => `${way}-${i + 1}`);

/**
 * What a failed job test prints: the phase it was in, the job as the API shows it, its workflow as
 * Temporal describes it (pending activities, their attempts and last failures), and the engine's
 * log lines about it: counts by event, then the warnings and errors.
 */
async function reportJob(phase: string, jobId: string | undefined): Promise<void> {
  const out: string[] = [`phase: ${phase}`];
  try {
    if (jobId) {
      const view = await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`);
      const body = await view.json();
      out.push(
        `job: ${JSON.stringify({ status: body.status, counts: body.counts, dispatch: body.dispatch, heldBack: body.heldBack, haltReason: body.haltReason })}`,
      );
      // The counters the job steers by, against the same counts recounted from its items and their records.
      const recount = await engine.service.jobs.store.recount('acme', jobId);
      out.push(
        `recount: ${JSON.stringify({ admitted: recount.admitted, running: recount.running, failedAgain: recount.failedAgain, succeeded: recount.succeeded, remaining: recount.remaining })}`,
      );
      const described = await engine.service.client.workflow.getHandle(body.workflowId).describe();
      out.push(
        `workflow: ${described.status.name}, history ${described.historyLength} events, pending activities ${JSON.stringify(
          (described.raw.pendingActivities ?? []).map((a) => ({
            type: a.activityType?.name,
            state: a.state,
            attempt: a.attempt,
            lastFailure: a.lastFailure?.message,
          })),
        )}`,
      );
    }
  } catch (err) {
    out.push(`could not read the job: ${err instanceof Error ? err.message : String(err)}`);
  }
  const counts = new Map<string, number>();
  for (const line of engine.logs) counts.set(line.event, (counts.get(line.event) ?? 0) + 1);
  out.push(`log events: ${JSON.stringify(Object.fromEntries(counts))}`);
  for (const line of engine.logs.filter((l) => l.level === 'warn' || l.level === 'error').slice(-30)) out.push(JSON.stringify(line));
  process.stderr.write(`${out.join('\n')}\n`);
}

async function json(res: Response, status: number) {
  const body = await res.json();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(body)}`);
  return body;
}
const groups = async () => (await json(await engine.request('GET', '/admin/tenants/acme/dlq/groups'), 200)).items as any[];
const job = async (jobId: string) => json(await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`), 200);
const log = createLog({ level: 'silent' });
const post = (path: string, body?: unknown) => engine.request('POST', `/admin/tenants/acme${path}`, { body });
async function auditRows(jobId: string): Promise<Map<string, number>> {
  const rows = await engine.service.db.query<{ execution_id: string; n: number }>(
    `SELECT execution_id, count(*)::int AS n FROM redrive_audit WHERE tenant_id = 'acme' AND job_id = $1 GROUP BY 1`,
    [jobId],
  );
  return new Map(rows.rows.map((row) => [row.execution_id, row.n]));
}
/** Temporal runs per workflow id on this engine's task queue (visibility is asynchronous: waits until `expected` runs are visible). */
async function runsPerWorkflow(expected: number): Promise<Map<string, number>> {
  let runs = new Map<string, number>();
  await until(
    async () => {
      runs = new Map();
      let total = 0;
      for await (const run of engine.service.client.workflow.list({ query: `TaskQueue = '${engine.taskQueue}' AND WorkflowType = 'pipelineWorkflow'` })) {
        runs.set(run.workflowId, (runs.get(run.workflowId) ?? 0) + 1);
        total++;
      }
      return total >= expected;
    },
    60_000,
    `${expected} visible runs`,
  );
  return runs;
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines);
  const ids = [
    ...idsOf('refused', REFUSED).map((id, i) => [id, 'refused', i + 1] as const),
    ...idsOf('timeout', TIMEOUT).map((id, i) => [id, 'timeout', i + 1] as const),
  ];
  for (const [executionId, way, n] of ids) await engine.start('acme', { pipeline: 'book', executionId, input: { way, n } });
  for (const [executionId] of ids) await engine.waitFor('acme', executionId, ['FAILED'], 240_000);
}, scaled(300_000));
afterAll(async () => engine?.stop());

describe('bulk re-drive of a failure group', () => {
  let refusedGroup: string;
  let timeoutGroup: string;

  it('shows exactly two groups with the right counts', async () => {
    const found = await groups();
    expect(found.map((g) => g.count)).toEqual([REFUSED, TIMEOUT]);
    [refusedGroup, timeoutGroup] = found.map((g) => g.groupId);
  });

  it('re-drives each execution of one group exactly once at 20/s, and leaves the other group and the DLQ alone', async () => {
    for (const id of idsOf('refused', REFUSED)) healthy.add(id);
    const dlqBefore = (await engine.service.db.query(`SELECT count(*)::int AS n FROM execution_dlq WHERE tenant_id = 'acme'`)).rows[0].n;
    const preview = await json(
      await post('/redrive-jobs?dryRun=true', {
        selection: { groupId: refusedGroup },
        reason: 'ledger restored',
        allowFailed: true,
        ratePerSecond: 20,
        batchSize: 100,
      }),
      200,
    );
    expect(preview).toMatchObject({ dryRun: true, matched: REFUSED, wouldAdmit: REFUSED, refused: {}, excluded: {} });
    expect(preview.sample).toHaveLength(20);
    // The dry run changed nothing.
    expect((await engine.service.db.query(`SELECT count(*)::int AS n FROM redrive_audit`)).rows[0].n).toBe(0);

    const created = await json(
      await post('/redrive-jobs', { selection: { groupId: refusedGroup }, reason: 'ledger restored', allowFailed: true, ratePerSecond: 20, batchSize: 100 }),
      202,
    );
    expect(created).toMatchObject({
      status: 'RUNNING',
      principal: 'test-admin',
      counts: { selected: REFUSED },
      workflowId: `redrive-job/acme/${created.jobId}`,
    });
    await until(async () => (await job(created.jobId)).status === 'COMPLETED', 120_000, 'the job to complete');
    await until(async () => (await job(created.jobId)).counts.running === 0, 120_000, 'its runs to end');
    const done = await job(created.jobId);
    expect(done.counts).toMatchObject({
      selected: REFUSED,
      processed: REFUSED,
      remaining: 0,
      admitted: REFUSED,
      skipped: 0,
      succeeded: REFUSED,
      failedAgain: 0,
    });
    // The rate held: never faster than asked (the first item goes at once).
    expect(done.rate.achieved).toBeLessThanOrEqual(20 * 1.05);

    // Exactly once: one audit row per execution of the group, naming the job; two runs and two ledger calls each.
    const audit = await auditRows(created.jobId);
    expect(audit.size).toBe(REFUSED);
    expect([...audit.values()].every((n) => n === 1)).toBe(true);
    const runs = await runsPerWorkflow(REFUSED * 2 + TIMEOUT);
    for (const id of idsOf('refused', REFUSED)) {
      expect(runs.get(`pipeline/acme/${id}`), id).toBe(2);
      expect(ledgerCalls.get(id), id).toBe(2);
    }
    // The job's runs wait behind live work on the pipeline task queue: Temporal priority 4
    // (pipeline.redrive-job.priority); the execution's first, live run kept the default.
    const priorities: (number | undefined)[] = [];
    for await (const run of engine.service.client.workflow.list({ query: `WorkflowId = "pipeline/acme/refused-1" AND TaskQueue = '${engine.taskQueue}'` }))
      priorities.push((await engine.service.client.workflow.getHandle(run.workflowId, run.runId).describe()).priority?.priorityKey);
    expect(priorities.sort()).toEqual([4, undefined]);
    // The other group: untouched.
    for (const id of idsOf('timeout', TIMEOUT)) expect(runs.get(`pipeline/acme/${id}`), id).toBe(1);
    expect((await groups()).map((g) => [g.groupId, g.count])).toEqual([[timeoutGroup, TIMEOUT]]);
    // Every envelope is still in the DLQ.
    expect((await engine.service.db.query(`SELECT count(*)::int AS n FROM execution_dlq WHERE tenant_id = 'acme'`)).rows[0].n).toBe(dlqBefore);
  });

  it("a dry run counts what the job then does, refusals by the single re-drive's codes", async () => {
    const selection = { executionIds: ['timeout-1', 'timeout-2', 'timeout-3', 'refused-1', 'refused-2', 'nobody'] };
    healthy.add('timeout-1').add('timeout-2').add('timeout-3');
    const preview = await json(await post('/redrive-jobs?dryRun=true', { selection, reason: 'mixed', allowFailed: true }), 200);
    expect(preview).toMatchObject({ matched: 5, wouldAdmit: 3, refused: { EXECUTION_SUCCEEDED: 2 }, excluded: { EXECUTION_NOT_FOUND: 1 } });
    const created = await json(await post('/redrive-jobs', { selection, reason: 'mixed', allowFailed: true, ratePerSecond: 100 }), 202);
    await until(async () => (await job(created.jobId)).status === 'COMPLETED', 60_000, 'the job to complete');
    const done = await job(created.jobId);
    expect(done.counts).toMatchObject({ selected: preview.matched, admitted: preview.wouldAdmit, skippedByCode: preview.refused });
    expect(done.excluded).toEqual(preview.excluded);
  });

  it('a dry run over a whole failure group reads the store a fixed number of times, not once per item', async () => {
    // The service's own classes on a store connection of their own, so only this dry run's statements are counted.
    const db = createPgDb(engine.database.url, { max: 4 });
    try {
      const { stores, redrive } = ownRedrive(engine, db, log);
      const jobs = new RedriveJobs(stores.jobs, redrive, engine.service.client, 'unused', log);
      const request = RedriveJobRequest.parse({ selection: { errorCode: 'LEDGER_DOWN' }, reason: 'count', allowFailed: true });
      const before = db.stats.queries;
      const preview = await jobs.dryRun('acme', request);
      expect(preview.matched).toBeGreaterThanOrEqual(50);
      expect(preview.wouldAdmit + Object.values(preview.refused).reduce((a, b) => a + b, 0)).toBe(preview.matched);
      // The selection, then the records and the Command effects of all its items: three statements.
      expect(db.stats.queries - before).toBe(3);
    } finally {
      await db.close();
    }
  });

  it('halts when a canary of 5 fails again, says why, and finishes after resume', async () => {
    // CI once saw this test run out its whole timeout (167 s; 5–12 s as a rule) with no wait's own
    // message: on a failure it prints which phase it was in and what the job and its workflow were doing.
    let phase = 'creating the job';
    const seen: { jobId?: string } = {};
    onTestFailed(() => reportJob(phase, seen.jobId));
    const created = await json(
      await post('/redrive-jobs', {
        selection: { groupId: timeoutGroup },
        reason: 'try the ledger',
        allowFailed: true,
        canary: 5,
        ratePerSecond: 50,
        batchSize: 200,
      }),
      202,
    );
    seen.jobId = created.jobId;
    phase = 'waiting for the canary to halt the job';
    await until(async () => (await job(created.jobId)).status === 'PAUSED', 120_000, 'the canary to halt the job');
    const halted = await job(created.jobId);
    expect(halted.haltReason).toMatch(/^canary of 5: 5 of 5 re-driven items failed again/);
    expect(halted.counts).toMatchObject({ admitted: 5, failedAgain: 5, running: 0 });
    expect(halted.controlLog.at(-1)).toMatchObject({ action: 'halt', principal: 'system' });

    for (const id of idsOf('timeout', TIMEOUT)) healthy.add(id);
    phase = 'resuming';
    const resumed = await json(await post(`/redrive-jobs/${created.jobId}/resume`, { reason: 'ledger fixed' }), 200);
    expect(resumed).toMatchObject({ status: 'RUNNING', haltReason: null });
    phase = 'waiting for the resumed job to complete';
    await until(async () => (await job(created.jobId)).status === 'COMPLETED', 120_000, 'the resumed job to complete');
    const done = await job(created.jobId);
    expect(done.counts.admitted + done.counts.skipped).toBe(done.counts.selected);
    expect(done.controlLog.map((e: any) => e.action)).toEqual(['halt', 'resume']);
    // Finished jobs refuse control.
    const again = await post(`/redrive-jobs/${created.jobId}/pause`);
    expect([again.status, await again.json()]).toMatchObject([409, { status: 409, code: 'JOB_FINISHED', jobStatus: 'COMPLETED' }]);
  });

  it('starts a job whose start was lost (the API died between commit and start): the sweeper starts it', async () => {
    // The state a crash leaves: the job and its items committed, no workflow.
    const jobs = engine.service.jobs;
    const selection = await jobs.store.selectByIds('acme', ['refused-3', 'refused-4']);
    const request = {
      selection: { executionIds: ['refused-3', 'refused-4'] },
      reason: 'lost start',
      allowFailed: true,
      batchSize: 50,
      ratePerSecond: 10,
      haltOn: DEFAULT_HALT_ON,
    };
    const lost = await jobs.store.create({
      tenantId: 'acme',
      jobId: 'lost-start',
      principal: 'test-admin',
      reason: 'lost start',
      request,
      batchSize: 50,
      ratePerSecond: 10,
      canary: null,
      haltOn: DEFAULT_HALT_ON,
      selection,
    });
    expect((await job(lost.jobId)).dispatch).toBe('pending');
    expect(await jobs.sweepOnce(0)).toBe(1);
    await until(async () => (await job(lost.jobId)).status === 'COMPLETED', 60_000, 'the swept job to complete');
    const done = await job(lost.jobId);
    expect(done).toMatchObject({ dispatch: 'started', counts: { selected: 2, skippedByCode: { EXECUTION_SUCCEEDED: 2 } } });
    expect(await jobs.sweepOnce(0)).toBe(0);
  });

  it(
    'pauses, resumes and aborts: a paused job admits nothing more than the batch in hand, an aborted one ends its workflow',
    { timeout: scaled(180_000) },
    async () => {
      // Items refused at admission (they succeeded) still go at the job's pace: 2/s keeps the job busy.
      const selection = { executionIds: idsOf('refused', 60) };
      const created = await json(await post('/redrive-jobs', { selection, reason: 'pace me', allowFailed: true, ratePerSecond: 2 }), 202);
      const processed = async () => (await job(created.jobId)).counts.processed as number;
      await until(async () => (await processed()) >= 3, 60_000, 'three items processed');
      const paused = await json(await post(`/redrive-jobs/${created.jobId}/pause`, { reason: 'dependency wobbling' }), 200);
      expect(paused).toMatchObject({ status: 'PAUSED', haltReason: null, etaSeconds: null });
      expect(await json(await post(`/redrive-jobs/${created.jobId}/pause`), 200)).toMatchObject({ status: 'PAUSED' });
      const atPause = paused.counts.processed;
      const resumed = await json(await post(`/redrive-jobs/${created.jobId}/resume`), 200);
      expect(resumed.status).toBe('RUNNING');
      await until(async () => (await processed()) >= atPause + 2, 60_000, 'two more items after resume');
      const aborted = await json(await post(`/redrive-jobs/${created.jobId}/abort`, { reason: 'enough' }), 200);
      expect(aborted).toMatchObject({ status: 'ABORTED', etaSeconds: 0, finishedAt: expect.any(String) });
      // The workflow ends Canceled on the abort (never Completed); what it processed after the abort is at most the item in hand.
      const handle = engine.service.client.workflow.getHandle(created.workflowId);
      await expect(handle.result()).rejects.toThrow(/cancel/i);
      expect((await handle.describe()).status.name).toBe('CANCELLED');
      const final = await job(created.jobId);
      expect(final.counts.processed - aborted.counts.processed).toBeLessThanOrEqual(1);
      expect(final.counts.remaining).toBeGreaterThan(0);
      expect(final.counts.skippedByCode).toEqual({ EXECUTION_SUCCEEDED: final.counts.processed });
      expect(final.controlLog.map((e: any) => [e.action, e.principal, e.reason ?? null])).toEqual([
        ['pause', 'test-admin', 'dependency wobbling'],
        ['resume', 'test-admin', null],
        ['abort', 'test-admin', 'enough'],
      ]);
    },
  );

  it('answers 4xx for bad input and unknown jobs, and changes nothing', async () => {
    const jobsBefore = (await engine.service.db.query(`SELECT count(*)::int AS n FROM redrive_job`)).rows[0].n;
    const cases: [unknown, number, string][] = [
      [{ selection: {}, reason: 'x', allowFailed: true }, 400, 'VALIDATION_FAILED'],
      [{ selection: { groupId: 'nope' }, reason: 'x', allowFailed: true }, 400, 'VALIDATION_FAILED'],
      [{ selection: { errorCode: 'LEDGER_DOWN' }, reason: 'x', allowFailed: true, ratePerSecond: 1000 }, 400, 'VALIDATION_FAILED'],
      [{ selection: { errorCode: 'LEDGER_DOWN' }, reason: 'x', allowFailed: true, batchSize: 0 }, 400, 'VALIDATION_FAILED'],
      [{ selection: { errorCode: 'NO_SUCH_CODE' }, reason: 'x', allowFailed: true }, 422, 'SELECTION_EMPTY'],
    ];
    for (const [body, status, code] of cases) {
      const res = await post('/redrive-jobs', body);
      expect([res.status, (await res.json()).code], JSON.stringify(body)).toEqual([status, code]);
    }
    // 10,000 ids of the longest allowed length (about 1.3 MB) reach the selection: none exists here.
    const ids = Array.from({ length: 10_000 }, (_, i) => `${String(i).padStart(5, '0')}-${'x'.repeat(122)}`);
    const listed = await post('/redrive-jobs?dryRun=true', { selection: { executionIds: ids }, reason: 'x', allowFailed: true });
    expect([listed.status, await listed.json()]).toEqual([
      422,
      expect.objectContaining({ code: 'SELECTION_EMPTY', excluded: { EXECUTION_NOT_FOUND: 10_000 } }),
    ]);
    // Past 2 MiB the job route answers 413; every other route keeps 64 KiB.
    const huge = await post('/redrive-jobs', { selection: { executionIds: ids }, reason: 'x'.repeat(2 * 1024 * 1024), allowFailed: true });
    expect([huge.status, (await huge.json()).code]).toEqual([413, 'BODY_TOO_LARGE']);
    const pause = await post('/redrive-jobs/00000000-0000-0000-0000-000000000000/pause', { reason: 'x'.repeat(70 * 1024) });
    expect([pause.status, (await pause.json()).code]).toEqual([413, 'BODY_TOO_LARGE']);
    const unknown = await engine.request('GET', '/admin/tenants/acme/redrive-jobs/00000000-0000-0000-0000-000000000000');
    expect([unknown.status, (await unknown.json()).code]).toEqual([404, 'JOB_NOT_FOUND']);
    const otherTenant = await engine.request('GET', '/admin/tenants/other/redrive-jobs');
    expect((await json(otherTenant, 200)).items).toEqual([]);
    expect((await engine.service.db.query(`SELECT count(*)::int AS n FROM redrive_job`)).rows[0].n).toBe(jobsBefore);
    const list = await json(await engine.request('GET', '/admin/tenants/acme/redrive-jobs?limit=2'), 200);
    expect(list.items).toHaveLength(2);
    expect(list.nextCursor).toEqual(expect.any(String));
    const next = await json(await engine.request('GET', `/admin/tenants/acme/redrive-jobs?limit=2&cursor=${list.nextCursor}`), 200);
    expect(next.items.map((j: any) => j.jobId)).not.toContain(list.items[0].jobId);
  });
});
