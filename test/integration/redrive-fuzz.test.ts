/**
 * Properties: whatever arrives at the re-drive endpoint (bodies, headers, ids, query),
 * the answer is never a 5xx, and nothing changes unless a re-drive is admitted, which
 * the generated requests never qualify for (their expectedVersion is never the
 * current one). Across the body routes, values Postgres cannot store (NUL, unpaired
 * surrogates) and header-bound fields that no header can carry are generated into
 * otherwise valid requests: each is a 400 naming the field, and changes no row. Forged
 * list cursors are a 400, never a 500. Runs against the real app, Postgres and dev server.
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
    checkpoints: await q('SELECT tenant_id, handoff_key FROM checkpoint_outbox ORDER BY handoff_key'),
  });
}

beforeAll(async () => {
  engine = await startTestEngine([
    definePipeline({
      name: 'fails',
      steps: [
        localStep(
          'x',
          () => {
            throw new NonRetryableException('no', 'NOPE');
          },
          { command: true },
        ),
      ],
    }),
  ]);
  await engine.start('tenant-a', { pipeline: 'fails', executionId: 'fuzz-1' });
  const failed = await engine.waitFor('tenant-a', 'fuzz-1', ['FAILED']);
  await engine.service.client.workflow
    .getHandle(failed.workflowId)
    .result()
    .catch(() => undefined);
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
  'content-type': fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/problem+json',
    '',
    'application/x-www-form-urlencoded',
  ),
  authorization: fc.constantFrom(`Bearer ${ADMIN_TOKEN}`, `Bearer ${TENANT_A_TOKEN}`, 'Bearer ', 'Bearer wrong', 'Basic abc', '', `bearer ${ADMIN_TOKEN}`),
});
const query = fc.constantFrom('', '?dryRun=true', '?dryRun=false', '?dryRun=yes', '?other=1', '?dryRun=true&dryRun=false');

describe('re-drive endpoint under random input', () => {
  it('never answers 5xx and never changes state', async () => {
    const before = await state();
    await fc.assert(
      fc.asyncProperty(id, id, body, headers, query, async (tenantId, executionId, raw, hdrs, q) => {
        const path = `/pipeline/admin/tenants/${encodeURIComponent(tenantId)}/executions/${encodeURIComponent(executionId)}/redrive${q}`;
        const res = await engine.service.app.request(path, {
          method: 'POST',
          headers: Object.fromEntries(Object.entries(hdrs).filter(([, v]) => v !== '')),
          body: raw,
        });
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) expect(res.headers.get('content-type')).toBe('application/problem+json');
      }),
      { numRuns: 400 },
    );
    expect(await state()).toBe(before);
  });
});

// A string Postgres cannot store: a NUL or an unpaired surrogate somewhere in it.
const unstorable = fc
  .tuple(fc.string({ maxLength: 8 }), fc.constantFrom('\u0000', '\ud800', '\udbff', '\udc00', '\udfff'), fc.string({ maxLength: 8 }))
  .map(([a, bad, b]) => a + bad + b);
// ...hidden anywhere in a JSON value: as a value or as a key, nested.
const unstorableJson = fc
  .tuple(fc.jsonValue({ maxDepth: 2 }), unstorable, fc.constantFrom('value', 'key', 'nested-key', 'array'))
  .map(([json, bad, where]) =>
    where === 'value' ? { ok: json, bad } : where === 'key' ? { [bad]: json } : where === 'nested-key' ? { a: [1, { [bad]: 1 }] } : [json, [bad]],
  );
// A correlationId no HTTP header or gRPC metadata value can carry.
const headerUnsafe = fc.oneof(unstorable, fc.constantFrom('注文-1', 'a\nb', 'x\r\nX-Evil: 1', ' leading', 'trailing ', 'é', '\t'));

let serial = 0;
const poisoned = fc.oneof(
  fc.record({ field: fc.constantFrom('executionKey', 'resource.name', 'resource.type', 'pipeline'), bad: unstorable }),
  fc.record({ field: fc.constant('correlationId'), bad: headerUnsafe }),
  fc.record({ field: fc.constant('input'), bad: unstorableJson }),
  fc.record({ field: fc.constantFrom('handoffKey', 'records'), bad: fc.oneof(unstorable, unstorableJson) }),
  fc.record({ field: fc.constant('reason'), bad: unstorable }),
);

function requestFor(field: string, bad: unknown): { path: string; body: Record<string, unknown> } {
  const n = ++serial;
  if (field === 'handoffKey' || field === 'records') {
    const body: Record<string, unknown> = { handoffKey: `h-${n}`, pipeline: 'fails', records: [{ id: 1 }] };
    if (field === 'handoffKey') body.handoffKey = typeof bad === 'string' ? bad : `h\u0000${n}`;
    else body.records = [{ id: 1 }, bad];
    return { path: '/api/tenants/tenant-a/checkpoints', body };
  }
  if (field === 'reason') {
    return {
      path: '/admin/tenants/tenant-a/executions/fuzz-1/redrive',
      body: { expectedVersion: version, reason: bad, allowFailed: true, intent: 'RETRY_FAILED_COMMAND' },
    };
  }
  const body: Record<string, unknown> = {
    pipeline: 'fails',
    executionId: `poison-${n}`,
    executionKey: `key-${n}`,
    correlationId: `corr-${n}`,
    resource: { type: 'order', name: `o-${n}` },
    input: { n },
  };
  if (field.startsWith('resource.')) body.resource = { ...(body.resource as object), [field.slice('resource.'.length)]: bad };
  else body[field] = bad;
  return { path: '/api/tenants/tenant-a/executions', body };
}

describe('values Postgres cannot store, across routes', () => {
  it('answers 400 naming the field and changes no row', async () => {
    await fc.assert(
      fc.asyncProperty(poisoned, async ({ field, bad }) => {
        const before = await state();
        const { path, body } = requestFor(field, bad);
        const res = await engine.request('POST', path, { body });
        const problem = await res.json();
        expect(res.status, JSON.stringify(problem)).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(problem.code).toBe('VALIDATION_FAILED');
        expect(problem.issues.map((i: { path: string }) => i.path.split('.')[0])).toContain(field.split('.')[0]);
        expect(await state()).toBe(before);
      }),
      { numRuns: 150 },
    );
  });
});

const forgedTimestamp = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom(
    '2026-02-30',
    '2026-02-30T00:00:00.000Z',
    '+275760-09-13T00:00:00.000Z',
    '-000001-01-01T00:00:00.000Z',
    '0000-01-01T00:00:00.000Z',
    '2026-13-01T00:00:00.000Z',
    '2026-01-01T24:00:00.000Z',
    '2026-01-01 00:00:00',
    '2026-01-01T00:00:00Z',
  ),
  fc
    .tuple(fc.integer({ min: 0, max: 99999 }), fc.integer({ min: 0, max: 13 }), fc.integer({ min: 0, max: 32 }))
    .map(([y, m, d]) => `${y}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}T00:00:00.000Z`),
  fc.string({ maxLength: 30 }),
);
const forgedCursorValue = fc.oneof(
  fc.record({ createdAt: forgedTimestamp, executionId: fc.oneof(fc.constant('fuzz-1'), unstorable, fc.string({ maxLength: 20 })) }),
  fc.record({ before: fc.oneof(fc.integer(), fc.double(), fc.constant(2 ** 63), fc.constant(-1), fc.string({ maxLength: 5 })) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const forgedCursor = fc.oneof(
  forgedCursorValue.map((v) => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8').toString('base64url')),
  fc.string({ maxLength: 40 }),
);

describe('forged list cursors', () => {
  it('answer 200 or 400 INVALID_CURSOR, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('executions', 'dlq', 'rejects'), forgedCursor, async (list, cursor) => {
        const res = await engine.request('GET', `/admin/tenants/tenant-a/${list}?cursor=${encodeURIComponent(cursor)}`);
        expect([200, 400]).toContain(res.status);
        if (res.status === 400) expect(['INVALID_CURSOR', 'VALIDATION_FAILED']).toContain((await res.json()).code);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses forged cursors with an impossible date, a date past the JavaScript range or a NUL in the id', async () => {
    const cursor = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    for (const forged of [
      { createdAt: '2026-02-30', executionId: 'a' },
      { createdAt: '+275760-09-13T00:00:00.000Z', executionId: 'a' },
      { createdAt: '2026-01-01T00:00:00.000Z', executionId: 'a\u0000b' },
    ]) {
      const res = await engine.request('GET', `/admin/tenants/tenant-a/executions?cursor=${cursor(forged)}`);
      expect([res.status, (await res.json()).code]).toEqual([400, 'INVALID_CURSOR']);
    }
  });
});

describe('chunked oversized bodies', () => {
  it('are refused with 413 having read at most one chunk past 64 KiB, on every body route', async () => {
    const routes = ['/api/tenants/tenant-a/executions', '/api/tenants/tenant-a/checkpoints', '/admin/tenants/tenant-a/executions/fuzz-1/redrive'];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        fc.integer({ min: 64 * 1024 + 1, max: 4 * 1024 * 1024 }),
        fc.integer({ min: 1, max: 48 * 1024 }),
        async (route, total, chunkSize) => {
          const before = await state();
          let pulled = 0;
          const body = new ReadableStream<Uint8Array>(
            {
              pull(controller) {
                if (pulled >= total) return controller.close();
                const size = Math.min(chunkSize, total - pulled);
                pulled += size;
                controller.enqueue(new Uint8Array(size).fill(0x20));
              },
            },
            { highWaterMark: 0 },
          );
          const res = await engine.service.app.request(`/pipeline${route}`, {
            method: 'POST',
            body,
            duplex: 'half',
            headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          } as RequestInit);
          expect(res.status).toBe(413);
          expect((await res.json()).code).toBe('BODY_TOO_LARGE');
          expect(pulled).toBeLessThanOrEqual(64 * 1024 + chunkSize);
          expect(await state()).toBe(before);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe('every read route under random ids and query strings', () => {
  // Every byte percent-encoded (a lone surrogate becomes U+FFFD's bytes: a URL carries bytes, not UTF-16).
  const pct = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  const segment = fc.oneof(
    { arbitrary: fc.constantFrom('tenant-a', 'fuzz-1', 'x'), weight: 3 },
    fc.string({ maxLength: 12 }).map(pct),
    unstorable.map(pct),
    fc.constantFrom('%00', '%C0%80', '%ED%A0%80', '%FF', '..', '%2F'),
  );
  const queryValue = fc.oneof(fc.string({ maxLength: 12 }), unstorable, forgedCursor, fc.constantFrom('10.0', '-1', '1e3', '', '999999999999'));
  const queryName = fc.constantFrom('limit', 'cursor', 'status', 'terminalReason', 'errorCode', 'window', 'since', 'until', 'x');
  const query = fc.array(fc.tuple(queryName, queryValue), { maxLength: 2 }).map((pairs) => pairs.map(([k, v]) => `${k}=${pct(v)}`).join('&'));
  const route = fc.constantFrom(
    (t: string) => `/admin/tenants/${t}/executions`,
    (t: string, e: string) => `/admin/tenants/${t}/executions/${e}`,
    (t: string, e: string) => `/admin/tenants/${t}/executions/${e}/effects`,
    (t: string, e: string) => `/admin/tenants/${t}/executions/${e}/history`,
    (t: string) => `/admin/tenants/${t}/dlq`,
    (t: string) => `/admin/tenants/${t}/dlq/groups`,
    (t: string) => `/admin/tenants/${t}/rejects`,
    (t: string) => `/admin/tenants/${t}/triage`,
    (t: string) => `/admin/tenants/${t}/pipelines`,
    () => '/admin/triage',
  );

  it('never answers 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(route, segment, segment, query, async (path, tenantId, executionId, q) => {
        const res = await engine.request('GET', `${path(tenantId, executionId)}${q ? `?${q}` : ''}`);
        expect(res.status, `${path(tenantId, executionId)}?${q}`).toBeLessThan(500);
        if (res.status >= 400) expect(res.headers.get('content-type')).toBe('application/problem+json');
      }),
      { numRuns: 400 },
    );
  });
});
