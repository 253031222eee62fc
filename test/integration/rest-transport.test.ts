/**
 * REST transition workers over real sockets: a worker-kit app and two raw endpoints on
 * loopback, the real engine, dev server and Postgres. Deadline warning and outcome
 * unknown (log lines, record, effect, no second request), refused and accepted
 * re-drives of REMOTE_OUTCOME_UNKNOWN, Retry-After, non-retryable 4xx, and the kit's
 * dedupe under concurrent and repeated deliveries.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionRecordDetail } from '../../src/contract/responses';
import { definePipeline, restStep } from '../../src/pipeline/define';
import { createRestTransitionWorker, ensureDedupeSchema, TransitionRejectedError } from '@pipeline-orchestrator/worker-kit';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { retryUntilSuccess } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

const SENTINEL = 'SENTINEL-PAN-4111111111111111';
/**
 * The remote steps' deadline: 2 s on a quiet machine, stretched with the load (as every wait
 * of the suite), so a success-path call on a loaded CI machine is not parked for being slow.
 * The hang outlasts it by a second.
 */
const DEADLINE_MS = scaled(2000);
const HANG_MS = DEADLINE_MS + 1000;

let engine: TestEngine;
let workerDb: TestDatabase;
let server: ServerType;
let base = '';
/** HTTP requests that reached the worker, by Idempotency-Key (or path for raw routes). */
const requests: Record<string, number> = {};
const arrivals: Record<string, number[]> = {};
/** Handler runs by transition key. */
const handled: Record<string, number> = {};
/** Deliveries through the dropping route, by Idempotency-Key. */
const resets: Record<string, number> = {};

async function startWorkerServer() {
  workerDb = await createTestDatabase();
  await ensureDedupeSchema(workerDb.db);
  const kit = createRestTransitionWorker({
    db: workerDb.db,
    platform: 'kit-test/1.0',
    duplicateWaitMs: 5000,
    async handler(input, call) {
      handled[call.transitionKey] = (handled[call.transitionKey] ?? 0) + 1;
      const body = input as { mode?: string; hangMs?: number; hangAttempt?: number; value?: unknown };
      if (body.mode === 'hang' && call.attempt === (body.hangAttempt ?? 1)) await new Promise((resolve) => setTimeout(resolve, body.hangMs ?? HANG_MS));
      if (body.mode === 'slow') await new Promise((resolve) => setTimeout(resolve, 300));
      if (body.mode === 'reject') throw new TransitionRejectedError('amount invalid', 422);
      return { handledBy: 'kit', attempt: call.attempt, value: body.value ?? null };
    },
  });
  const outer = new Hono();
  outer.use('*', async (c, next) => {
    const key = c.req.header('idempotency-key') ?? c.req.path;
    requests[key] = (requests[key] ?? 0) + 1;
    (arrivals[c.req.path] ??= []).push(Date.now());
    await next();
  });
  outer.route('/kit', kit);
  // The kit behind a connection that drops after the first delivery of each key has run (the answer is lost, not the outcome).
  outer.post('/kit-reset/transition', async (c) => {
    const key = c.req.header('idempotency-key') ?? '';
    const answer = await kit.fetch(new Request('http://kit/transition', { method: 'POST', headers: c.req.raw.headers, body: await c.req.text() }));
    resets[key] = (resets[key] ?? 0) + 1;
    if (resets[key] === 1) {
      (c.env as { incoming: { socket: { destroy(): void } } }).incoming.socket.destroy();
      return new Response(null, { status: 500 });
    }
    return answer;
  });
  // Every delivery is reset before any answer: the service cannot know whether this worker took the call.
  outer.post('/always-reset', (c) => {
    (c.env as { incoming: { socket: { destroy(): void } } }).incoming.socket.destroy();
    return new Response(null, { status: 500 });
  });
  outer.post('/flaky503', (c) => {
    const attempt = Number((c.req.header('idempotency-key') ?? '::1').split(':')[2]);
    if (attempt === 1) return c.json({ error: 'busy' }, 503, { 'retry-after': '1' });
    return c.json({ ok: true, attempt });
  });
  // A lookup that is down (a 404 would be the worker's "not recorded").
  outer.get('/lookup-broken/:key', (c) => c.text('lookup store down', 500));
  outer.post('/problem422', (c) =>
    c.body(
      JSON.stringify({ type: 'about:blank', status: 422, code: 'TEMPLATE_MISSING', detail: 'template "inv-2" is missing', retryable: false, input: SENTINEL }),
      422,
      {
        'content-type': 'application/problem+json',
      },
    ),
  );
  outer.post('/bad400', (c) => c.json({ error: 'bad' }, 400, { 'x-transition-worker-platform': 'raw-test/2.0' }));
  server = serve({ fetch: outer.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

beforeAll(async () => {
  await startWorkerServer();
  engine = await startTestEngine([
    definePipeline({
      name: 'remote',
      steps: [
        restStep(
          'call',
          { url: `${base}/kit/transition`, dispositionUrl: `${base}/kit/transition/{idempotencyKey}` },
          { command: true, timeoutMs: DEADLINE_MS },
        ),
      ],
    }),
    definePipeline({
      name: 'remote-lookup-down',
      steps: [
        restStep(
          'call',
          { url: `${base}/kit/transition`, dispositionUrl: `${base}/lookup-broken/{idempotencyKey}` },
          { command: true, timeoutMs: DEADLINE_MS },
        ),
      ],
    }),
    definePipeline({ name: 'reset', steps: [restStep('call', { url: `${base}/kit-reset/transition` }, { command: true, timeoutMs: DEADLINE_MS })] }),
    definePipeline({ name: 'retry-after', retry: { limit: 2, waitMs: 50, maxBackoffMs: 5000 }, steps: [restStep('flaky', { url: `${base}/flaky503` })] }),
    definePipeline({ name: 'bad-request', steps: [restStep('bad', { url: `${base}/bad400` })] }),
    definePipeline({ name: 'problem', steps: [restStep('render', { url: `${base}/problem422` })] }),
  ]);
});
afterAll(async () => {
  await engine?.stop();
  await new Promise((resolve) => server?.close(resolve));
  await workerDb?.drop();
});

describe('REST transport', () => {
  it('calls the worker with the transition identity and stores its answer', async () => {
    await engine.start('acme', { pipeline: 'remote', executionId: 'rest-ok', input: { mode: 'ok', value: 7 } });
    const record = await engine.waitFor('acme', 'rest-ok', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN']);
    expect(record.status).toBe('SUCCEEDED');
    expect(record.segmentInput).toEqual({ handledBy: 'kit', attempt: 1, value: 7 });
    expect(requests['acme/rest-ok:0:1']).toBe(1);
    expect((await engine.effects.get('acme', 'rest-ok', 0))?.status).toBe('SUCCEEDED');
  });

  it(
    'parks a call past its deadline as REMOTE_OUTCOME_UNKNOWN: one warning, one outcome-unknown event, no payload, no second request',
    { timeout: scaled(15 * DEADLINE_MS) },
    async () => {
      await engine.start('acme', { pipeline: 'remote', executionId: 'rest-hang', input: { mode: 'hang', hangMs: HANG_MS, secret: SENTINEL } });
      const record = await engine.waitFor('acme', 'rest-hang', ['REMOTE_OUTCOME_UNKNOWN', 'FAILED', 'SUCCEEDED'], 10 * DEADLINE_MS);
      expect(record).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', failedStepIndex: 0, terminalReason: null, lastErrorCode: 'REMOTE_OUTCOME_UNKNOWN' });
      expect(record.segmentInput).toEqual({ mode: 'hang', hangMs: HANG_MS, secret: SENTINEL });
      expect((await engine.effects.get('acme', 'rest-hang', 0))?.status).toBe('AMBIGUOUS');

      const mine = (event: string) => engine.logs.filter((l) => l.event === event && l.executionId === 'rest-hang');
      const warnings = mine('remote_transition_deadline_warning');
      const unknown = mine('remote_transition_outcome_unknown');
      expect(warnings).toHaveLength(1);
      expect(warnings[0].elapsedMs).toBeGreaterThanOrEqual(Math.floor(DEADLINE_MS * 0.75) - 50);
      // The warning comes before the deadline (the order of events, not how fast a loaded machine logs).
      expect(warnings[0].elapsedMs).toBeLessThan(unknown[0].elapsedMs);
      expect(unknown).toHaveLength(1);
      expect(unknown[0]).toMatchObject({
        tenantId: 'acme',
        executionId: 'rest-hang',
        attempt: 1,
        transitionKey: 'rest-hang:0:1',
        protocol: 'REST',
        target: `${base}/kit/transition`,
        deadlineMs: DEADLINE_MS,
        decision: 'PARKED_REMOTE_OUTCOME_UNKNOWN_NO_RETRY',
      });
      expect(unknown[0].elapsedMs).toBeGreaterThanOrEqual(DEADLINE_MS);
      expect(JSON.stringify([...warnings, ...unknown])).not.toContain(SENTINEL);
      expect(JSON.stringify(engine.logs)).not.toContain(SENTINEL);

      // No retry: once the run has closed no attempt can follow, so count the requests then.
      expect(await engine.runsOf('acme', 'rest-hang', 1)).toEqual([expect.objectContaining({ status: 'FAILED' })]);
      expect(requests['acme/rest-hang:0:1']).toBe(1);
      expect(Object.keys(requests).filter((key) => key.startsWith('acme/rest-hang:'))).toEqual(['acme/rest-hang:0:1']);
      expect((await engine.dlq.list('acme', { limit: 50 })).entries.filter((e) => e.envelope.executionId === 'rest-hang')).toEqual([]);

      // What an operator sees: the call, and the worker's own word once its handler has finished (after the deadline).
      await retryUntilSuccess(async () => {
        const view = ExecutionRecordDetail.parse(await (await engine.request('GET', '/admin/tenants/acme/executions/rest-hang')).json());
        expect(view.remoteCall).toMatchObject({ transitionKey: 'rest-hang:0:1', protocol: 'REST', target: `${base}/kit/transition`, deadlineMs: DEADLINE_MS });
        expect(view.disposition).toMatchObject({ lookup: 'ANSWERED', workerRecorded: true, workerState: 'DONE', transitionKey: 'rest-hang:0:1' });
      });
    },
  );

  it('delivers the same key again when the connection drops after the worker ran: the stored answer, no new attempt, the handler ran once', async () => {
    await engine.start('acme', { pipeline: 'reset', executionId: 'rest-reset', input: { mode: 'ok', value: 9 } });
    const record = await engine.waitFor('acme', 'rest-reset', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN']);
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempt: 1, segmentInput: { handledBy: 'kit', attempt: 1, value: 9 } });
    expect(resets['acme/rest-reset:0:1']).toBe(2);
    expect(Object.keys(resets).filter((key) => key.startsWith('acme/rest-reset:'))).toEqual(['acme/rest-reset:0:1']);
    expect(handled['rest-reset:0:1']).toBe(1);
    expect(handled['rest-reset:0:2']).toBeUndefined();
    expect((await engine.effects.get('acme', 'rest-reset', 0))?.status).toBe('SUCCEEDED');
    expect(engine.logs.filter((l) => l.event === 'remote_transition_in_progress' && l.executionId === 'rest-reset')).toHaveLength(1);
  });

  it(
    'parks REMOTE_OUTCOME_UNKNOWN (UNCONFIRMED, never FAILED) when every delivery of one key is reset, and claims nothing about the worker',
    { timeout: scaled(120_000) },
    async () => {
      const budgeted = await startTestEngine(
        [
          definePipeline({
            name: 'always-reset',
            steps: [
              restStep(
                'call',
                { url: `${base}/always-reset`, dispositionUrl: `${base}/lookup-broken/{idempotencyKey}` },
                { command: true, timeoutMs: DEADLINE_MS },
              ),
            ],
          }),
        ],
        { 'pipeline.orchestrator.worker.in-progress-budget': '3s' },
      );
      try {
        await budgeted.start('acme', { pipeline: 'always-reset', executionId: 'rest-always-reset' });
        const record = await budgeted.waitFor('acme', 'rest-always-reset', ['REMOTE_OUTCOME_UNKNOWN', 'FAILED', 'SUCCEEDED'], 60_000);
        expect(record).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', attempt: 1, lastErrorCode: 'REMOTE_OUTCOME_UNKNOWN' });
        expect(record.remoteCall?.inProgress).toMatchObject({ state: 'UNCONFIRMED', budgetMs: 3000 });
        expect(record.remoteCall!.inProgress!.answers).toBeGreaterThanOrEqual(2);
        expect(requests['acme/rest-always-reset:0:1']).toBe(record.remoteCall!.inProgress!.answers);
        expect(requests['acme/rest-always-reset:0:2']).toBeUndefined();
        expect((await budgeted.effects.get('acme', 'rest-always-reset', 0))?.status).toBe('AMBIGUOUS');
        expect(budgeted.logs.filter((l) => l.event === 'remote_transition_outcome_unknown' && l.executionId === 'rest-always-reset')).toMatchObject([
          { decision: 'PARKED_DELIVERY_UNCONFIRMED' },
        ]);
        expect((await budgeted.dlq.list('acme', { limit: 50 })).entries.filter((e) => e.envelope.executionId === 'rest-always-reset')).toEqual([]);
        // Unanswered deliveries say nothing about the worker: with its lookup down, the guard answers 503, not "recorded".
        const res = await budgeted.request('POST', '/admin/tenants/acme/executions/rest-always-reset/redrive', {
          body: { expectedVersion: record.version, reason: 'checked', allowFailed: true, confirmedDisposition: 'NOT_APPLIED' },
        });
        const problem = await res.json();
        expect([res.status, problem.code]).toEqual([503, 'DISPOSITION_EVIDENCE_UNAVAILABLE']);
        expect(problem.evidence).toMatchObject({ workerRecorded: null });
      } finally {
        await budgeted.stop();
      }
    },
  );

  it('refuses to re-drive REMOTE_OUTCOME_UNKNOWN without allowFailed or without a confirmed disposition', async () => {
    const record = (await engine.service.store.get('acme', 'rest-hang'))!;
    const send = (body: object) =>
      engine.request('POST', '/admin/tenants/acme/executions/rest-hang/redrive', { body: { expectedVersion: record.version, reason: 'checked', ...body } });
    const noConfirm = await send({ allowFailed: true });
    expect([noConfirm.status, (await noConfirm.json()).code]).toEqual([409, 'DISPOSITION_UNCONFIRMED']);
    const ordinary = await send({ allowFailed: false, confirmedDisposition: 'NOT_APPLIED' });
    expect([ordinary.status, (await ordinary.json()).code]).toEqual([409, 'ALLOW_FAILED_REQUIRED']);
    expect((await engine.service.store.get('acme', 'rest-hang'))?.version).toBe(record.version);
  });

  it('refuses NOT_APPLIED when the worker recorded the transition: 409 DISPOSITION_CONTRADICTED with the evidence, dry run too, nothing changes', async () => {
    const record = (await engine.service.store.get('acme', 'rest-hang'))!;
    const body = { expectedVersion: record.version, reason: 'README said so', allowFailed: true, confirmedDisposition: 'NOT_APPLIED' };
    const res = await engine.request('POST', '/admin/tenants/acme/executions/rest-hang/redrive', { body });
    const problem = await res.json();
    expect([res.status, problem.code]).toEqual([409, 'DISPOSITION_CONTRADICTED']);
    expect(problem.evidence).toMatchObject({ lookup: 'ANSWERED', workerRecorded: true, workerState: 'DONE', transitionKey: 'rest-hang:0:1' });
    const dry = await (await engine.request('POST', '/admin/tenants/acme/executions/rest-hang/redrive?dryRun=true', { body })).json();
    expect(dry).toMatchObject({ admitted: false, status: 409, code: 'DISPOSITION_CONTRADICTED', evidence: { workerRecorded: true } });
    const misplaced = await engine.request('POST', '/admin/tenants/acme/executions/rest-hang/redrive', {
      body: { ...body, confirmedDisposition: undefined, overrideEvidence: true },
    });
    expect(misplaced.status).toBe(400);
    expect((await engine.service.store.get('acme', 'rest-hang'))?.version).toBe(record.version);
    expect(requests['acme/rest-hang:0:2']).toBeUndefined();
  });

  it(
    'answers 503 DISPOSITION_EVIDENCE_UNAVAILABLE when the lookup cannot be reached, rather than guessing',
    { timeout: scaled(15 * DEADLINE_MS) },
    async () => {
      await engine.start('acme', { pipeline: 'remote-lookup-down', executionId: 'rest-nolookup', input: { mode: 'hang', hangMs: HANG_MS } });
      const record = await engine.waitFor('acme', 'rest-nolookup', ['REMOTE_OUTCOME_UNKNOWN', 'FAILED', 'SUCCEEDED'], 10 * DEADLINE_MS);
      expect(record.status).toBe('REMOTE_OUTCOME_UNKNOWN');
      const body = { expectedVersion: record.version, reason: 'checked', allowFailed: true, confirmedDisposition: 'NOT_APPLIED' };
      const res = await engine.request('POST', '/admin/tenants/acme/executions/rest-nolookup/redrive', { body });
      const problem = await res.json();
      expect([res.status, problem.code]).toEqual([503, 'DISPOSITION_EVIDENCE_UNAVAILABLE']);
      expect(problem.evidence).toMatchObject({ lookup: 'UNAVAILABLE', workerRecorded: null });
      expect(problem.detail).toContain('500');
      expect((await engine.service.store.get('acme', 'rest-nolookup'))?.version).toBe(record.version);
    },
  );

  it('re-drives a confirmed REMOTE_OUTCOME_UNKNOWN with an audited evidence override, a new attempt and a new Idempotency-Key, to completion', async () => {
    const record = (await engine.service.store.get('acme', 'rest-hang'))!;
    const res = await engine.request('POST', '/admin/tenants/acme/executions/rest-hang/redrive', {
      body: {
        expectedVersion: record.version,
        reason: 'domain side checked: the notification was never sent',
        allowFailed: true,
        confirmedDisposition: 'NOT_APPLIED',
        overrideEvidence: true,
      },
    });
    expect(res.status).toBe(202);
    const audit = await engine.service.db.query<{ reason: string; request: Record<string, unknown> }>(
      "SELECT reason, request FROM redrive_audit WHERE execution_id = 'rest-hang'",
    );
    expect(audit.rows).toEqual([
      {
        reason: 'domain side checked: the notification was never sent',
        request: expect.objectContaining({ overrideEvidence: true, confirmedDisposition: 'NOT_APPLIED' }),
      },
    ]);
    expect(engine.logs.find((l) => l.event === 'execution_redrive_admitted' && l.executionId === 'rest-hang')).toMatchObject({ evidenceOverridden: true });
    const done = await engine.waitFor('acme', 'rest-hang', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 20_000);
    expect(done.status).toBe('SUCCEEDED');
    expect(requests['acme/rest-hang:0:2']).toBe(1);
    expect(done.segmentInput).toMatchObject({ handledBy: 'kit', attempt: 2 });
    expect(done.remoteCall).toBeNull();
  });

  it('retries a 503 after its Retry-After of 1 s', async () => {
    const before = arrivals['/flaky503']?.length ?? 0;
    await engine.start('acme', { pipeline: 'retry-after', executionId: 'rest-503' });
    expect((await engine.waitFor('acme', 'rest-503', ['SUCCEEDED', 'FAILED'], 20_000)).status).toBe('SUCCEEDED');
    const [first, second] = arrivals['/flaky503'].slice(before);
    expect(second - first).toBeGreaterThanOrEqual(950);
    expect(engine.logs.find((l) => l.event === 'execution_step_retry_scheduled' && l.executionId === 'rest-503')).toMatchObject({
      errorCode: 'HTTP_503',
      delayMs: 1000,
    });
  });

  it('sends a 400 to the DLQ as non_retryable HTTP_400 with the worker platform', async () => {
    await engine.start('acme', { pipeline: 'bad-request', executionId: 'rest-400' });
    const record = await engine.waitFor('acme', 'rest-400', ['FAILED', 'SUCCEEDED'], 20_000);
    expect(record).toMatchObject({ status: 'FAILED', terminalReason: 'non_retryable', lastErrorCode: 'HTTP_400' });
    expect(requests['acme/rest-400:0:1']).toBe(1);
    const envelope = (await engine.dlq.list('acme', { limit: 50, errorCode: 'HTTP_400' })).entries[0]?.envelope;
    expect(envelope).toMatchObject({ executionId: 'rest-400', transport: 'REST', platform: 'raw-test/2.0', retryable: false, retriesObserved: 0 });
  });
});

describe("the worker's own error", () => {
  it("ends the step with the problem's code and detail, in the record and the DLQ envelope, and nothing else of its body", async () => {
    await engine.start('acme', { pipeline: 'problem', executionId: 'rest-problem' });
    const record = await engine.waitFor('acme', 'rest-problem', ['FAILED', 'SUCCEEDED'], 20_000);
    expect(record).toMatchObject({ status: 'FAILED', terminalReason: 'non_retryable', lastErrorCode: 'TEMPLATE_MISSING' });
    expect(record.lastErrorMessage).toBe(`REST worker at ${base}/problem422 answered 422: template "inv-2" is missing`);
    const envelope = (await engine.dlq.list('acme', { limit: 50, errorCode: 'TEMPLATE_MISSING' })).entries[0]?.envelope;
    expect(envelope).toMatchObject({ executionId: 'rest-problem', errorCode: 'TEMPLATE_MISSING', retryable: false, retriesObserved: 0 });
    expect(JSON.stringify([record, envelope])).not.toContain(SENTINEL);
    expect(requests['acme/rest-problem:0:1']).toBe(1);
  });
});

describe('transition-worker kit', () => {
  const deliver = (key: string, body: unknown) =>
    fetch(`${base}/kit/transition`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(body) });

  it('runs the handler once for two concurrent deliveries of the same transition identity', async () => {
    const [a, b] = await Promise.all([deliver('acme/kit-1:0:1', { mode: 'slow', value: 1 }), deliver('acme/kit-1:0:1', { mode: 'slow', value: 1 })]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await a.json()).toEqual(await b.json());
    expect(handled['kit-1:0:1']).toBe(1);
    expect(requests['acme/kit-1:0:1']).toBe(2);
  });

  it('answers a redelivery after a crash between its effect and the orchestrator commit with the stored result', async () => {
    const first = await deliver('acme/kit-2:3:1', { value: 'x' });
    const firstBody = await first.json();
    // The orchestrator never saw that answer (it crashed); Temporal redelivers the same identity.
    const again = await deliver('acme/kit-2:3:1', { value: 'x' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-transition-worker-platform')).toBe('kit-test/1.0');
    expect(await again.json()).toEqual(firstBody);
    expect(handled['kit-2:3:1']).toBe(1);
  });

  it('stores and replays a rejection; rejects a missing key; answers lookups', async () => {
    const rejected = await deliver('acme/kit-3:0:1', { mode: 'reject' });
    expect(rejected.status).toBe(422);
    expect(rejected.headers.get('content-type')).toBe('application/problem+json');
    expect(await rejected.json()).toMatchObject({ status: 422, detail: 'amount invalid', retryable: false });
    expect((await deliver('acme/kit-3:0:1', { mode: 'reject' })).status).toBe(422);
    expect(handled['kit-3:0:1']).toBe(1);
    const missing = await fetch(`${base}/kit/transition`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(missing.status).toBe(400);
    expect(await (await fetch(`${base}/kit/transition/${encodeURIComponent('acme/kit-2:3:1')}`)).json()).toMatchObject({ recorded: true, state: 'DONE' });
    expect(await (await fetch(`${base}/kit/transition/${encodeURIComponent('acme/never:0:1')}`)).json()).toMatchObject({
      recorded: false,
      state: null,
      legacy: false,
    });
    expect((await fetch(`${base}/kit/transition/never:0:1`)).status).toBe(400);
  });
});
