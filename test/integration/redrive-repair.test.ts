/**
 * Repair against the real dev server and Postgres, with the payload codec on: a re-drive with a
 * corrected input (an RFC 7396 patch) resumes the failed step with it and succeeds; every refusal
 * (ordinary replay, version, Command effect, role, size, schema) answers its code and changes
 * nothing; the audit row holds the patch sealed, and no log line, DLQ envelope or history entry
 * holds a value (sentinels in the input and in the patch are grepped for).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromFixture, runPipeline } from '../../src/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sha256Hex } from '../../src/api/middleware/bearer-auth';
import { definePipeline, localStep, NonRetryableError } from '../../src/pipeline/define';
import { openSent } from '../../src/repair/correct-input';
import { AesGcmCodec } from '../../src/temporal/codec';
import { SUBMIT_TOKEN, TEST_TOKENS, startTestEngine, type TestEngine } from '../helpers/engine';

const SENTINEL_INPUT = `SENTINEL-input-${randomBytes(6).toString('hex')}`;
const SENTINEL_PATCH = `SENTINEL-patch-${randomBytes(6).toString('hex')}`;
const REPAIR_TOKEN = 'test-repair-token';
const CODEC_KEY = { id: 'repair-k1', key: randomBytes(32).toString('base64') };

const Order = z.object({ sku: z.string(), qty: z.number().int().positive() });
type Order = z.infer<typeof Order> & Record<string, unknown>;

/** The inputs each step was called with, per `executionId/step`. */
const seen: Record<string, { transitionKey: string; input: Order }[]> = {};
const note = (step: string, ctx: { executionId: string; transitionKey: string }, input: Order) =>
  (seen[`${ctx.executionId}/${step}`] ??= []).push({ transitionKey: ctx.transitionKey, input });

const pass = (name: string) => localStep(name, (input: Order) => input);
const price = localStep(
  'price',
  (order: Order, ctx) => {
    note('price', ctx, order);
    if (order.qty <= 0) throw new NonRetryableError('qty must be positive', 'BAD_QTY');
    return { ...order, total: order.qty * 10 };
  },
  { input: Order },
);
const charge = localStep(
  'charge',
  (order: Order, ctx) => {
    note('charge', ctx, order);
    if (order.fatal) throw new NonRetryableError('card refused for good', 'CARD_REFUSED');
    if (order.qty <= 0) throw Object.assign(new Error('declined'), { code: 'CARD_DECLINED' });
    return { ...order, charged: true };
  },
  { command: true, retry: { limit: 0 } },
);
const pipelines = [
  definePipeline({ name: 'orders', steps: [pass('receive'), price, pass('ship')] }),
  definePipeline({ name: 'charges', steps: [pass('prepare'), charge, pass('finish')] }),
];

let engine: TestEngine;
const codec = new AesGcmCodec([CODEC_KEY]);

const redrive = (executionId: string, body: unknown, options: { token?: string; query?: string } = {}) =>
  engine.request('POST', `/admin/tenants/tenant-r/executions/${executionId}/redrive${options.query ?? ''}`, { body, token: options.token });

async function snapshot(executionId: string) {
  const q = async (sql: string) => (await engine.service.db.query(sql, ['tenant-r', executionId])).rows;
  return {
    record: await q('SELECT * FROM execution_record WHERE tenant_id = $1 AND execution_id = $2'),
    effects: await q('SELECT * FROM command_effect WHERE tenant_id = $1 AND execution_id = $2 ORDER BY step_index'),
    dlq: await q('SELECT id, envelope FROM execution_dlq WHERE tenant_id = $1 AND execution_id = $2 ORDER BY id'),
    audit: await q('SELECT * FROM redrive_audit WHERE tenant_id = $1 AND execution_id = $2'),
    dispatch: await q('SELECT dispatch_id, status FROM execution_dispatch WHERE tenant_id = $1 AND execution_id = $2 ORDER BY created_at'),
  };
}

async function failed(pipeline: string, executionId: string, input: Record<string, unknown>) {
  await engine.start('tenant-r', { pipeline, executionId, input });
  const record = await engine.waitFor('tenant-r', executionId, ['FAILED']);
  await engine.service.client.workflow
    .getHandle(record.workflowId)
    .result()
    .catch(() => undefined);
  return record;
}

async function expectRefused(executionId: string, body: unknown, status: number, code: string, token?: string) {
  const before = await snapshot(executionId);
  const res = await redrive(executionId, body, { token });
  const problem = await res.json();
  expect({ status: res.status, code: problem.code }).toEqual({ status, code });
  expect(await snapshot(executionId)).toEqual(before);
  return problem;
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines, {
    'pipeline.codec.keys': JSON.stringify([CODEC_KEY]),
    'pipeline.auth.tokens': JSON.stringify([...TEST_TOKENS, { sha256: sha256Hex(REPAIR_TOKEN), role: 'repair', name: 'repairer', readPayloads: true }]),
  });
});
afterAll(async () => {
  await engine?.stop();
});

describe('a re-drive with a corrected input', () => {
  it('resumes the failed step with the patched input and succeeds; audited with the patch sealed, no value in any log line', async () => {
    const record = await failed('orders', 'fix-1', { sku: 'A-1', qty: 0, note: SENTINEL_INPUT });
    expect(record).toMatchObject({ failedStepIndex: 1, lastErrorCode: 'BAD_QTY' });
    const patch = { qty: 2, coupon: SENTINEL_PATCH };
    const body = { expectedVersion: record.version, reason: 'customer confirmed qty 2', allowFailed: true, inputPatch: patch };

    // The dry run: the diff and each check's outcome, values only to a token allowed to read payloads; nothing changes.
    const before = await snapshot('fix-1');
    const dry = await (await redrive('fix-1', body, { query: '?dryRun=true' })).json();
    expect(dry).toMatchObject({
      admitted: true,
      resumeStepIndex: 1,
      attempt: 2,
      checks: { admission: 'passed', role: 'passed', size: 'passed', schema: 'passed' },
    });
    expect(dry.correction).toEqual({
      kind: 'patch',
      changedPaths: ['/coupon', '/qty'],
      beforeFingerprint: expect.stringMatching(/^sha256:/),
      afterFingerprint: expect.stringMatching(/^sha256:/),
    });
    const withValues = await (await redrive('fix-1', body, { query: '?dryRun=true', token: REPAIR_TOKEN })).json();
    expect(withValues.correction.after).toEqual({ sku: 'A-1', qty: 2, note: SENTINEL_INPUT, coupon: SENTINEL_PATCH });
    expect(await snapshot('fix-1')).toEqual(before);

    const res = await redrive('fix-1', body, { token: REPAIR_TOKEN });
    expect(res.status).toBe(202);
    const done = await engine.waitFor('tenant-r', 'fix-1', ['SUCCEEDED']);
    expect(done.segmentInput).toEqual({ sku: 'A-1', qty: 2, note: SENTINEL_INPUT, coupon: SENTINEL_PATCH, total: 20 });
    // The step ran once per attempt: the failed one with the original input, the new one with the corrected input.
    expect(seen['fix-1/price'].map((call) => [call.transitionKey, call.input.qty])).toEqual([
      ['fix-1:1:1', 0],
      ['fix-1:1:2', 2],
    ]);

    // The audit row: the patch sealed (no sentinel in it), the paths and fingerprints; the request column without the patch.
    const [audit] = (await snapshot('fix-1')).audit as Record<string, any>[];
    expect(audit.principal).toBe('repairer');
    expect(audit.repair).toMatchObject({
      kind: 'patch',
      changedPaths: ['/coupon', '/qty'],
      beforeFingerprint: dry.correction.beforeFingerprint,
      afterFingerprint: dry.correction.afterFingerprint,
    });
    expect(audit.repair.sent.sealed).toBeDefined();
    expect(JSON.stringify(audit)).not.toContain(SENTINEL_PATCH);
    expect(audit.request.inputPatch).toBeUndefined();
    expect(await openSent(audit.repair.sent, codec)).toEqual(patch);

    // History names the repair: who, why, which paths; the Temporal run's summary says so.
    const history = await (await engine.request('GET', '/admin/tenants/tenant-r/executions/fix-1/history')).json();
    expect(history.redrives.at(-1)).toMatchObject({
      principal: 'repairer',
      reason: 'customer confirmed qty 2',
      correctedInput: { kind: 'patch', changedPaths: ['/coupon', '/qty'], summary: 're-driven with a corrected input by repairer: /coupon, /qty' },
    });
    const description = await engine.service.client.workflow.getHandle(done.workflowId).describe();
    expect(await description.staticSummary()).toContain('re-driven with a corrected input');

    // No value anywhere it must not be: the log, the history answer, the DLQ envelope.
    const logged = engine.logs.map((line) => JSON.stringify(line)).join('\n');
    expect(logged).toContain('execution_redrive_admitted');
    expect(logged).toContain('/coupon');
    for (const sentinel of [SENTINEL_INPUT, SENTINEL_PATCH]) {
      expect(logged).not.toContain(sentinel);
      expect(JSON.stringify(history)).not.toContain(sentinel);
      expect(JSON.stringify((await snapshot('fix-1')).dlq)).not.toContain(sentinel);
    }
  });

  it('retries a failed Command with a patch under RETRY_FAILED_COMMAND when its effect is FAILED_RETRYABLE', async () => {
    const record = await failed('charges', 'fix-cmd', { sku: 'C-1', qty: 0 });
    expect((await engine.effects.get('tenant-r', 'fix-cmd', 1))?.status).toBe('FAILED_RETRYABLE');
    const res = await redrive('fix-cmd', {
      expectedVersion: record.version,
      reason: 'qty fixed',
      allowFailed: true,
      intent: 'RETRY_FAILED_COMMAND',
      inputPatch: { qty: 1 },
    });
    expect(res.status).toBe(202);
    expect((await engine.waitFor('tenant-r', 'fix-cmd', ['SUCCEEDED'])).segmentInput).toMatchObject({ qty: 1, charged: true });
    expect(seen['fix-cmd/charge'].map((call) => [call.transitionKey, call.input.qty])).toEqual([
      ['fix-cmd:1:1', 0],
      ['fix-cmd:1:2', 1],
    ]);
  });
});

describe('a corrected re-drive that cannot be admitted changes nothing', () => {
  let record: Awaited<ReturnType<typeof failed>>;
  const ok = (extra: Record<string, unknown> = {}) => ({ expectedVersion: record.version, reason: 'fix', allowFailed: true, inputPatch: { qty: 3 }, ...extra });
  beforeAll(async () => {
    record = await failed('orders', 'refuse-1', { sku: 'R-1', qty: 0, note: 'x'.repeat(40_000) });
  });

  it('refuses a patch on an ordinary replay (400)', async () => {
    const problem = await expectRefused('refuse-1', ok({ allowFailed: false }), 400, 'VALIDATION_FAILED');
    expect(problem.issues.map((issue: { path: string }) => issue.path)).toContain('inputPatch');
  });
  it('runs every existing check first: a stale expectedVersion is 409 VERSION_MISMATCH whatever the patch', async () => {
    await expectRefused('refuse-1', ok({ expectedVersion: record.version - 1, inputPatch: { qty: 'two' } }), 409, 'VERSION_MISMATCH');
  });
  it("refuses a corrected input that fails the step's declared schema (422 with the field issues)", async () => {
    const problem = await expectRefused('refuse-1', ok({ inputPatch: { qty: 'two' } }), 422, 'INPUT_INVALID');
    expect(problem.issues).toEqual([expect.objectContaining({ path: 'qty' })]);
  });
  it('refuses a corrected input over the input limit (422)', async () => {
    await expectRefused('refuse-1', ok({ inputPatch: { more: 'y'.repeat(40_000) } }), 422, 'INPUT_TOO_LARGE');
  });
  it('refuses a token that may not repair (403)', async () => {
    await expectRefused('refuse-1', ok(), 403, 'FORBIDDEN', SUBMIT_TOKEN);
  });
  it('refuses both a patch and a replacement at once (400)', async () => {
    await expectRefused('refuse-1', ok({ input: { sku: 'R-1', qty: 1 } }), 400, 'VALIDATION_FAILED');
  });
  it('keeps the Command-effect rules: RETRY_FAILED_COMMAND with a patch on a FAILED_TERMINAL effect is 409', async () => {
    const terminal = await failed('charges', 'refuse-cmd', { sku: 'C-2', qty: 1, fatal: true });
    expect((await engine.effects.get('tenant-r', 'refuse-cmd', 1))?.status).toBe('FAILED_TERMINAL');
    await expectRefused(
      'refuse-cmd',
      { expectedVersion: terminal.version, reason: 'fix', allowFailed: true, intent: 'RETRY_FAILED_COMMAND', inputPatch: { fatal: null } },
      409,
      'COMMAND_EFFECT_NOT_REDISPATCHABLE',
    );
  });
});

describe('a fork', () => {
  const fork = (executionId: string, body: unknown, options: { token?: string; query?: string } = {}) =>
    engine.request('POST', `/admin/tenants/tenant-r/executions/${executionId}/fork${options.query ?? ''}`, { body, token: options.token });
  const records = async () =>
    (await engine.service.db.query('SELECT execution_id, version FROM execution_record WHERE tenant_id = $1 ORDER BY execution_id', ['tenant-r'])).rows;
  let parent: Awaited<ReturnType<typeof failed>>;
  beforeAll(async () => {
    parent = await failed('charges', 'fork-p', { sku: 'F-1', qty: 0, note: SENTINEL_INPUT });
  });

  it("runs from the parent's failed step under its own identities, with a corrected input, and never touches the parent (counted)", async () => {
    const before = await snapshot('fork-p');
    const parentCharges = seen['fork-p/charge'].length;
    const body = { newExecutionId: 'fork-c', reason: 'replay with the fixed qty', inputPatch: { qty: 4 } };
    const dry = await (await fork('fork-p', body, { query: '?dryRun=true' })).json();
    expect(dry).toMatchObject({
      admitted: true,
      executionId: 'fork-c',
      forkedFrom: { executionId: 'fork-p', stepIndex: 1, version: parent.version },
      inputSource: 'store',
      commandSteps: [{ stepIndex: 1, step: 'charge', transitionKey: 'fork-c:1:1' }],
      correction: { kind: 'patch', changedPaths: ['/qty'] },
    });
    expect(await engine.service.store.get('tenant-r', 'fork-c')).toBeNull();

    const res = await fork('fork-p', body);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ executionId: 'fork-c', startStepIndex: 1, forkedFrom: { executionId: 'fork-p', stepIndex: 1 } });
    const done = await engine.waitFor('tenant-r', 'fork-c', ['SUCCEEDED']);
    expect(done.forkedFrom).toEqual({ executionId: 'fork-p', stepIndex: 1, version: parent.version });
    expect(done.segmentInput).toMatchObject({ qty: 4, charged: true, note: SENTINEL_INPUT });
    expect(seen['fork-c/charge'].map((call) => [call.transitionKey, call.input.qty])).toEqual([['fork-c:1:1', 4]]);
    expect((await engine.effects.get('tenant-r', 'fork-c', 1))?.status).toBe('SUCCEEDED');
    // The parent: record, effects, DLQ, audit and dispatch rows as they were; its step never ran again.
    expect(await snapshot('fork-p')).toEqual(before);
    expect(seen['fork-p/charge']).toHaveLength(parentCharges);

    const description = await engine.service.client.workflow.getHandle(done.workflowId).describe();
    expect(await description.staticSummary()).toContain('forked from fork-p at step 1');
    const forks: string[] = [];
    for await (const run of engine.service.client.workflow.list({ query: `PipelineForkedFrom = "fork-p" AND TaskQueue = "${engine.taskQueue}"` }))
      forks.push(run.workflowId);
    expect(forks).toEqual([done.workflowId]);
    expect(engine.logs.map((line) => JSON.stringify(line)).join('\n')).not.toContain(SENTINEL_INPUT);
  });

  it("starts from step 0 with the original input read from the first run's history", async () => {
    const body = { newExecutionId: 'fork-0', fromStep: 0, reason: 'from the top', input: { sku: 'F-1', qty: 5 } };
    const dry = await (await fork('fork-p', { ...body, dryRun: true })).json();
    expect(dry).toMatchObject({ admitted: true, inputSource: 'temporal-history', commandSteps: [{ stepIndex: 1, transitionKey: 'fork-0:1:1' }] });
    const withValues = await (await fork('fork-p', { ...body, dryRun: true }, { token: REPAIR_TOKEN })).json();
    expect(withValues.correction.before).toEqual({ sku: 'F-1', qty: 0, note: SENTINEL_INPUT });
    expect((await fork('fork-p', body)).status).toBe(202);
    expect((await engine.waitFor('tenant-r', 'fork-0', ['SUCCEEDED'])).segmentInput).toEqual({ sku: 'F-1', qty: 5, charged: true });
  });

  it('refuses, changing nothing: a step whose input is not known, an id in use, a token that may not repair, two corrections', async () => {
    const before = { records: await records(), parent: await snapshot('fork-p') };
    const cases: [unknown, string | undefined, number, string][] = [
      [{ newExecutionId: 'fork-x', fromStep: 2, reason: 'r' }, undefined, 422, 'STEP_INPUT_UNKNOWN'],
      [{ newExecutionId: 'fork-c', reason: 'r' }, undefined, 409, 'EXECUTION_EXISTS'],
      [{ newExecutionId: 'fork-x', reason: 'r' }, SUBMIT_TOKEN, 403, 'FORBIDDEN'],
      [{ newExecutionId: 'fork-x', reason: 'r', inputPatch: { qty: 1 }, input: {} }, undefined, 400, 'VALIDATION_FAILED'],
    ];
    for (const [body, token, status, code] of cases) {
      const res = await fork('fork-p', body, { token });
      expect({ status: res.status, code: (await res.json()).code }).toEqual({ status, code });
    }
    expect({ records: await records(), parent: await snapshot('fork-p') }).toEqual(before);
  });
});

describe('a production failure as a test fixture', () => {
  it('holds the failed step, its input and each attempt, for a token that may read payloads only', async () => {
    await failed('orders', 'fixture-1', { sku: 'X-1', qty: 0, note: SENTINEL_INPUT });
    const refused = await engine.request('GET', '/admin/tenants/tenant-r/executions/fixture-1/fixture');
    expect({ status: refused.status, code: (await refused.json()).code }).toEqual({ status: 403, code: 'FORBIDDEN' });
    const res = await engine.request('GET', '/admin/tenants/tenant-r/executions/fixture-1/fixture', { token: REPAIR_TOKEN });
    expect(res.status).toBe(200);
    const fixture = await res.json();
    expect(fixture).toMatchObject({
      format: 'pipeline-orchestrator/fixture@1',
      pipeline: 'orders',
      pipelineVersion: 1,
      status: 'FAILED',
      failedStep: { index: 1, name: 'price' },
      input: { sku: 'X-1', qty: 0, note: SENTINEL_INPUT },
      attempts: [
        { stepIndex: 0, attempt: 1, errorCode: null },
        { stepIndex: 1, attempt: 1, transitionKey: 'fixture-1:1:1', errorCode: 'BAD_QTY', errorMessage: 'qty must be positive' },
      ],
    });
    expect(engine.logs.map((line) => JSON.stringify(line)).join('\n')).not.toContain(SENTINEL_INPUT);

    // The author's loop: the fixture reproduces the failure in memory (the test fails), and the fix makes it pass.
    const file = join(mkdtempSync(join(tmpdir(), 'fixture-')), 'fixture-1.json');
    writeFileSync(file, JSON.stringify(fixture));
    const before = await runPipeline(pipelines[0], fromFixture(file));
    expect(before).toMatchObject({ status: 'FAILED', failedStep: 'price', errorCode: 'BAD_QTY' });
    expect(before.attempts.map((a) => a.transitionKey)).toEqual(['fixture-1:1:1']);
    const fixedPrice = localStep('price', (order: Order) => ({ ...order, total: Math.max(order.qty, 1) * 10 }), { input: Order });
    const fixed = definePipeline({ name: 'orders', steps: [pass('receive'), fixedPrice, pass('ship')] });
    expect(await runPipeline(fixed, fromFixture(file))).toMatchObject({ status: 'SUCCEEDED', output: { sku: 'X-1', total: 10 } });
  });
});
