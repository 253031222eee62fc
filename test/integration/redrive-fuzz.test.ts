/**
 * Property: whatever arrives at the re-drive endpoint (bodies, headers, ids, query),
 * the answer is never a 5xx, and nothing changes unless a re-drive is admitted, which
 * the generated requests never qualify for (their expectedVersion is never the
 * current one). Runs against the real app, Postgres and dev server.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { ADMIN_TOKEN, startTestEngine, TENANT_A_TOKEN, type TestEngine } from '../helpers/engine';

let engine: TestEngine;
let version = 0;

async function state() {
  const q = async (sql: string) => (await engine.service.db.query(sql)).rows;
  return JSON.stringify({
    records: await q('SELECT tenant_id, execution_id, status, version, attempt FROM execution_record ORDER BY execution_id'),
    effects: await q('SELECT * FROM command_effect ORDER BY execution_id'),
    dlq: await q('SELECT id FROM execution_dlq ORDER BY id'),
    audit: await q('SELECT redrive_id FROM redrive_audit'),
    dispatch: await q('SELECT dispatch_id, status FROM execution_dispatch ORDER BY dispatch_id'),
  });
}

beforeAll(async () => {
  engine = await startTestEngine([
    definePipeline({ name: 'fails', steps: [localStep('x', () => { throw new NonRetryableException('no', 'NOPE'); }, { command: true })] }),
  ]);
  await engine.start('tenant-a', { pipeline: 'fails', executionId: 'fuzz-1' });
  const failed = await engine.waitFor('tenant-a', 'fuzz-1', ['FAILED']);
  await engine.service.client.workflow.getHandle(failed.workflowId).result().catch(() => undefined);
  version = failed.version;
});
afterAll(async () => {
  await engine?.stop();
});

const printable = fc.string({ unit: fc.constantFrom(...'abcXYZ019 ._-/%:;,=+*"\'{}[]\\'.split('')), maxLength: 40 });
const id = fc.oneof(fc.constantFrom('tenant-a', 'fuzz-1', 'tenant-b', '', '-x', 'a'.repeat(129)), printable, fc.stringMatching(/^[A-Za-z0-9._-]{1,140}$/));
const notTheVersion = fc.oneof(fc.integer(), fc.double(), fc.string(), fc.constant(null)).filter((v) => v !== version);
const bodyObject = fc.record(
  {
    expectedVersion: notTheVersion,
    reason: fc.oneof(fc.string({ maxLength: 30 }), fc.integer(), fc.constant('')),
    allowFailed: fc.oneof(fc.boolean(), fc.constantFrom('true', 0, null)),
    intent: fc.oneof(fc.constant('RETRY_FAILED_COMMAND'), fc.string({ maxLength: 10 })),
    confirmedDisposition: fc.oneof(fc.constant('NOT_APPLIED'), fc.constant('APPLIED'), fc.string({ maxLength: 10 })),
    extra: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: [] },
);
const body = fc.oneof(
  bodyObject.map((b) => JSON.stringify(b)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 60 }),
  fc.constant(''),
  fc.constant('{"expectedVersion": 1e999, "reason": "x", "allowFailed": true}'),
);
const headers = fc.record({
  'content-type': fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/problem+json', '', 'application/x-www-form-urlencoded'),
  authorization: fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, `Bearer ${TENANT_A_TOKEN}`, 'Bearer ', 'Bearer wrong', 'Basic abc', '', `bearer ${ADMIN_TOKEN}`),
});
const query = fc.constantFrom('', '?dryRun=true', '?dryRun=false', '?dryRun=yes', '?other=1', '?dryRun=true&dryRun=false');

describe('re-drive endpoint under random input', () => {
  it('never answers 5xx and never changes state', async () => {
    const before = await state();
    await fc.assert(
      fc.asyncProperty(id, id, body, headers, query, async (tenantId, executionId, raw, hdrs, q) => {
        const path = `/pipeline/admin/tenants/${encodeURIComponent(tenantId)}/executions/${encodeURIComponent(executionId)}/redrive${q}`;
        const res = await engine.service.app.request(path, { method: 'POST', headers: Object.fromEntries(Object.entries(hdrs).filter(([, v]) => v !== '')), body: raw });
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) expect(res.headers.get('content-type')).toBe('application/problem+json');
      }),
      { numRuns: 400 },
    );
    expect(await state()).toBe(before);
  });
});
