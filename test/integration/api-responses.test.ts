/**
 * Every route answers what its document says (issue 21): one valid request per operation of
 * the generated OpenAPI document, over HTTP to the real service (real Postgres, the dev
 * server, a worker that runs the executions), and each answer's body validated with a JSON
 * Schema validator (ajv, draft 2020-12 as OpenAPI 3.1 uses) against the document's schema
 * for that status and media type. A status the document does not list for the operation
 * fails the test, and so does an operation of the document no request reached.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { documentChecker, type DocumentChecker } from '../helpers/document-conformance';
import { ADMIN_TOKEN, startTestEngine, TEST_TOKENS, type TestEngine } from '../helpers/engine';
import { sha256Hex } from '../../src/api/middleware/bearer-auth';
import { scaled } from '../helpers/time-scale';

const failing = localStep(
  'charge',
  () => {
    throw Object.assign(new Error('ledger refused the charge'), { code: 'LEDGER_DOWN' });
  },
  { retry: { limit: 0 } },
);
const pipelines = [
  definePipeline({ name: 'ok', steps: [localStep('only', (input: unknown) => ({ echoed: input }))] }),
  definePipeline({ name: 'pay', steps: [localStep('prepare', (input: unknown) => input), failing] }),
];
/** FAILED executions: one re-driven alone, the others by one bulk job. */
const FAILED_IDS = Array.from({ length: 12 }, (_, i) => `pay-${i + 1}`);
const JOB_IDS = FAILED_IDS.slice(1, 11);
/** A token that may read payloads (the fixture route). */
const PAYLOAD_TOKEN = 'api-responses-payload-token';

let engine: TestEngine;
let base = '';
let document: any;
/** Each operation a request reached, as `METHOD /document/path`, with the statuses it answered. */
const reached = new Map<string, number[]>();
let checker: DocumentChecker;

/**
 * Sends one request to the operation `METHOD path` (the document's path; `params` fill its
 * `{placeholders}`), checks the status is `expected`, validates the body against the
 * document, and answers the body.
 */
async function call(
  method: 'GET' | 'POST',
  path: string,
  expected: number,
  options: { params?: Record<string, string>; query?: string; body?: unknown; token?: string } = {},
): Promise<any> {
  const concrete = path.replace(/\{([A-Za-z]+)\}/g, (_, name: string) => {
    const value = options.params?.[name];
    if (value === undefined) throw new Error(`no value for {${name}} in ${path}`);
    return encodeURIComponent(value);
  });
  const res = await fetch(`${base}${concrete}${options.query ? `?${options.query}` : ''}`, {
    method,
    headers: { authorization: `Bearer ${options.token ?? ADMIN_TOKEN}`, ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
  });
  const text = await res.text();
  const body = text ? JSON.parse(text) : undefined;
  if (res.status !== expected) throw new Error(`${method} ${concrete}: expected ${expected}, got ${res.status}: ${text.slice(0, 500)}`);
  const mediaType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
  const validate = checker.validatorOf(method, path, res.status, mediaType);
  if (!validate(body)) {
    throw new Error(`${method} ${concrete} ${res.status}: the body does not match the document: ${checker.errorsText(validate)}\n${text.slice(0, 1000)}`);
  }
  const key = `${method} ${path}`;
  reached.set(key, [...(reached.get(key) ?? []), res.status]);
  return body;
}

const P = '/pipeline';
const T = { tenantId: 'apiresp' };

beforeAll(async () => {
  const keys = JSON.stringify([{ id: 'k1', key: randomBytes(32).toString('base64') }]);
  engine = await startTestEngine(
    pipelines,
    {
      'pipeline.server.port': 0,
      'pipeline.codec.keys': keys,
      'pipeline.auth.tokens': JSON.stringify([...TEST_TOKENS, { sha256: sha256Hex(PAYLOAD_TOKEN), role: 'repair', readPayloads: true }]),
    },
    { http: true },
  );
  base = `http://127.0.0.1:${engine.service.ports.http!}`;
  document = await (await fetch(`${base}${P}/openapi.json`)).json();
  checker = documentChecker(document);
  await Promise.all(FAILED_IDS.map((executionId) => engine.start('apiresp', { pipeline: 'pay', executionId, input: { amount: 1 } })));
  await Promise.all(FAILED_IDS.map((executionId) => engine.waitFor('apiresp', executionId, ['FAILED'], scaled(120_000))));
});
afterAll(async () => {
  await engine?.stop();
});

describe('the validator', () => {
  it('refuses a body that does not match the document (so a mismatch fails this file)', async () => {
    const path = `${P}/admin/tenants/{tenantId}/executions/{executionId}`;
    const record = await call('GET', path, 200, { params: { ...T, executionId: 'pay-1' } });
    const validate = checker.validatorOf('GET', path, 200, 'application/json');
    expect(validate(record)).toBe(true);
    const { version: _version, ...withoutVersion } = record;
    expect(validate(withoutVersion)).toBe(false);
    expect(validate({ ...record, status: 'ASLEEP' })).toBe(false);
    expect(validate({ ...record, attempt: '1' })).toBe(false);
  });
});

describe('one valid request per route, each answer validated against the document', () => {
  it('the service routes: executions, results, checkpoints, reads, triage, pipelines, DLQ, history', async () => {
    const started = await call('POST', `${P}/api/tenants/{tenantId}/executions`, 202, {
      params: T,
      body: { pipeline: 'ok', executionId: 'ok-1', input: { n: 1 } },
    });
    expect(started.dispatch).toMatch(/^(started|pending)$/);
    await engine.waitFor('apiresp', 'ok-1', ['SUCCEEDED'], scaled(120_000));
    const result = await call('GET', `${P}/api/tenants/{tenantId}/executions/{executionId}/result`, 200, {
      params: { ...T, executionId: 'ok-1' },
      query: 'wait=30s',
    });
    expect(result.output).toEqual({ echoed: { n: 1 } });
    await call('POST', `${P}/api/tenants/{tenantId}/checkpoints`, 202, { params: T, body: { handoffKey: 'handoff-1', pipeline: 'ok', records: [{ a: 1 }] } });

    const list = await call('GET', `${P}/admin/tenants/{tenantId}/executions`, 200, { params: T, query: 'limit=5' });
    expect(list.items.length).toBeGreaterThan(0);
    await call('GET', `${P}/admin/tenants/{tenantId}/executions/{executionId}/effects`, 200, { params: { ...T, executionId: 'pay-1' } });
    const story = await call('GET', `${P}/admin/tenants/{tenantId}/executions/{executionId}/history`, 200, { params: { ...T, executionId: 'pay-1' } });
    expect(story.dlq.length).toBe(1);
    await call('GET', `${P}/admin/tenants/{tenantId}/rejects`, 200, { params: T });
    await call('GET', `${P}/admin/tenants/{tenantId}/triage`, 200, { params: T, query: 'window=15m' });
    await call('GET', `${P}/admin/triage`, 200);
    const versions = await call('GET', `${P}/admin/tenants/{tenantId}/pipelines`, 200, { params: T });
    expect(versions.items.map((p: { pipeline: string }) => p.pipeline).sort()).toEqual(['ok', 'pay']);
    const dlq = await call('GET', `${P}/admin/tenants/{tenantId}/dlq`, 200, { params: T, query: 'terminalReason=retry_exhausted' });
    expect(dlq.items.length).toBe(FAILED_IDS.length);
    const groups = await call('GET', `${P}/admin/tenants/{tenantId}/dlq/groups`, 200, { params: T });
    expect(groups.items[0].count).toBe(FAILED_IDS.length);
  });

  it('a single re-drive: its dry run and the re-drive itself', async () => {
    const path = `${P}/admin/tenants/{tenantId}/executions/{executionId}/redrive`;
    const params = { ...T, executionId: 'pay-1' };
    const record = await call('GET', `${P}/admin/tenants/{tenantId}/executions/{executionId}`, 200, { params });
    const body = { expectedVersion: record.version, reason: 'ledger back', allowFailed: true };
    const preview = await call('POST', path, 200, { params, query: 'dryRun=true', body });
    expect(preview.admitted).toBe(true);
    const accepted = await call('POST', path, 202, { params, body });
    expect(accepted.status).toBe('QUEUED');
  });

  it('repair: a fixture, a corrected re-drive in a dry run, a fork (dry run and start)', async () => {
    const params = { ...T, executionId: 'pay-12' };
    const fixture = await call('GET', `${P}/admin/tenants/{tenantId}/executions/{executionId}/fixture`, 200, { params, token: PAYLOAD_TOKEN });
    expect(fixture.input).toEqual({ amount: 1 });
    const record = await call('GET', `${P}/admin/tenants/{tenantId}/executions/{executionId}`, 200, { params });
    const body = { expectedVersion: record.version, reason: 'amount fixed', allowFailed: true, intent: 'RETRY_FAILED_COMMAND', inputPatch: { amount: 2 } };
    const preview = await call('POST', `${P}/admin/tenants/{tenantId}/executions/{executionId}/redrive`, 200, {
      params,
      query: 'dryRun=true',
      body,
      token: PAYLOAD_TOKEN,
    });
    expect(preview.correction).toMatchObject({ changedPaths: ['/amount'], after: { amount: 2 } });
    const fork = `${P}/admin/tenants/{tenantId}/executions/{executionId}/fork`;
    const forkBody = { newExecutionId: 'pay-12-fork', reason: 'on a fresh id', inputPatch: { amount: 3 } };
    expect((await call('POST', fork, 200, { params, query: 'dryRun=true', body: forkBody })).admitted).toBe(true);
    expect((await call('POST', fork, 202, { params, body: forkBody })).forkedFrom).toMatchObject({ executionId: 'pay-12' });
  });

  it('a bulk job: dry run, start, list, read, pause, resume, abort', async () => {
    const path = `${P}/admin/tenants/{tenantId}/redrive-jobs`;
    // 0.1 items a second: the job cannot finish within 90 s of its start, whatever the machine's speed, so it is RUNNING for the controls below.
    const body = { selection: { executionIds: JOB_IDS }, reason: 'ledger back', allowFailed: true, ratePerSecond: 0.1, batchSize: 1 };
    const plan = await call('POST', path, 200, { params: T, query: 'dryRun=true', body });
    expect([plan.matched, plan.wouldAdmit]).toEqual([JOB_IDS.length, JOB_IDS.length]);
    const job = await call('POST', path, 202, { params: T, body });
    const params = { ...T, jobId: job.jobId };
    const page = await call('GET', path, 200, { params: T });
    expect(page.items.map((j: { jobId: string }) => j.jobId)).toContain(job.jobId);
    await call('GET', `${path}/{jobId}`, 200, { params });
    expect((await call('POST', `${path}/{jobId}/pause`, 200, { params, body: { reason: 'looking' } })).status).toBe('PAUSED');
    expect((await call('POST', `${path}/{jobId}/resume`, 200, { params, body: {} })).status).toBe('RUNNING');
    expect((await call('POST', `${path}/{jobId}/abort`, 200, { params, body: { reason: 'enough' } })).status).toBe('ABORTED');
  });

  it('the root routes: liveness, readiness, the codec pair', async () => {
    await call('GET', '/healthz', 200);
    await call('GET', '/readyz', 200);
    const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('{"a":1}').toString('base64') };
    const encoded = await call('POST', '/codec/encode', 200, { body: { payloads: [plain] } });
    const decoded = await call('POST', '/codec/decode', 200, { body: encoded });
    expect(decoded.payloads).toEqual([plain]);
  });

  it('every operation of the document was reached', () => {
    const operations = Object.entries(document.paths).flatMap(([path, item]: [string, any]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    expect(operations.length).toBeGreaterThanOrEqual(24);
    expect(operations.filter((operation) => !reached.has(operation))).toEqual([]);
  });
});
