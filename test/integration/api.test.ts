/**
 * The HTTP surface of the engine against real Postgres and the dev server: bad input
 * gets a 4xx problem+json with a stable code and changes nothing; auth answers 401/403;
 * the DLQ list filters and pages read-only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { DlqList, ExecutionList, ExecutionRecordDetail, ExecutionRecordView, ProblemSchema, StartExecutionResponse } from '../../src/contract/responses';
import { startTestEngine, SUBMIT_TOKEN, TENANT_A_TOKEN, type TestEngine } from '../helpers/engine';

let engine: TestEngine;

const pipelines = [
  definePipeline({ name: 'ok', steps: [localStep('only', (input: unknown) => input)] }),
  definePipeline({
    name: 'fails',
    steps: [
      localStep('only', (input: { code: string }) => {
        throw new NonRetryableException('rejected', input.code);
      }),
    ],
  }),
];

async function tableCounts() {
  const result = await engine.service.db.query<Record<string, number>>(
    `SELECT (SELECT count(*)::int FROM execution_record) AS records, (SELECT count(*)::int FROM execution_dispatch) AS dispatches,
            (SELECT count(*)::int FROM execution_dlq) AS dlq, (SELECT coalesce(sum(version), 0)::int FROM execution_record) AS versions`,
  );
  return result.rows[0];
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines);
  // Three DLQ entries with two error codes, for filters and paging.
  for (const [id, code] of [
    ['f1', 'BAD_A'],
    ['f2', 'BAD_B'],
    ['f3', 'BAD_A'],
  ]) {
    await engine.start('tenant-a', { pipeline: 'fails', executionId: id, input: { code } });
    await engine.waitFor('tenant-a', id, ['FAILED']);
  }
});
afterAll(async () => {
  await engine?.stop();
});

describe('start execution: bad input', () => {
  const cases: [string, Parameters<TestEngine['request']>[2], number, string][] = [
    ['a non-JSON content type', { body: '{"pipeline":"ok"}', headers: { 'content-type': 'text/plain' } }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ['broken JSON', { body: '{"pipeline":' }, 400, 'INVALID_JSON'],
    ['a JSON array', { body: [] }, 400, 'VALIDATION_FAILED'],
    ['a missing pipeline', { body: { input: {} } }, 400, 'VALIDATION_FAILED'],
    ['an unknown field', { body: { pipeline: 'ok', surprise: 1 } }, 400, 'VALIDATION_FAILED'],
    ['an invalid executionId', { body: { pipeline: 'ok', executionId: '../etc' } }, 400, 'VALIDATION_FAILED'],
    ['an unknown pipeline', { body: { pipeline: 'nope' } }, 422, 'UNKNOWN_PIPELINE'],
    ['a body over 64 KiB', { body: { pipeline: 'ok', input: 'x'.repeat(70_000) } }, 413, 'BODY_TOO_LARGE'],
    ['no token', { body: { pipeline: 'ok' }, token: null }, 401, 'UNAUTHORIZED'],
    ['a wrong token', { body: { pipeline: 'ok' }, token: 'guess' }, 401, 'UNAUTHORIZED'],
  ];
  it.each(cases)('answers %s with a problem and changes nothing', async (_label, options, status, code) => {
    const before = await tableCounts();
    const res = await engine.request('POST', '/api/tenants/tenant-a/executions', options);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const body = await res.json();
    expect(body).toMatchObject({ status, code, title: expect.any(String), detail: expect.any(String), type: expect.stringContaining('urn:pipeline:problem:') });
    expect(JSON.stringify(body)).not.toContain('xxxxxxxx');
    expect(await tableCounts()).toEqual(before);
  });

  it('logs a failed authentication without the token', async () => {
    const presented = 'wrong-token-SENTINEL-7f3a';
    expect((await engine.request('GET', '/admin/tenants/tenant-a/dlq', { token: presented })).status).toBe(401);
    const failures = engine.logs.filter((l) => l.event === 'admin_auth_failed');
    expect(failures.at(-1)).toMatchObject({ reason: 'unknown_token', path: '/pipeline/admin/tenants/tenant-a/dlq' });
    expect(JSON.stringify(engine.logs)).not.toContain('SENTINEL-7f3a');
  });

  it('answers a malformed tenant id with 400 INVALID_ID', async () => {
    const res = await engine.request('POST', '/api/tenants/-bad/executions', { body: { pipeline: 'ok' } });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe('INVALID_ID');
  });

  it('answers 409 EXECUTION_EXISTS for a reused executionId', async () => {
    await engine.start('tenant-a', { pipeline: 'ok', executionId: 'dup-1' });
    const before = await tableCounts();
    const res = await engine.request('POST', '/api/tenants/tenant-a/executions', { body: { pipeline: 'ok', executionId: 'dup-1' } });
    expect(res.status).toBe(409);
    expect((await res.json()).code).toBe('EXECUTION_EXISTS');
    expect((await tableCounts()).records).toBe(before.records);
  });
});

describe('admin reads', () => {
  it('returns the record without its payload', async () => {
    await engine.start('tenant-a', { pipeline: 'ok', executionId: 'secret-1', input: { card: 'SENTINEL-4111' } });
    await engine.waitFor('tenant-a', 'secret-1', ['SUCCEEDED']);
    const res = await engine.request('GET', '/admin/tenants/tenant-a/executions/secret-1');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ executionId: 'secret-1', status: 'SUCCEEDED', version: 3, segmentInputBytes: expect.any(Number) });
    expect(text).not.toContain('SENTINEL');
    expect(JSON.stringify(engine.logs)).not.toContain('SENTINEL');
  });

  it('answers 404 the same way for another tenant and for nowhere', async () => {
    const other = await engine.request('GET', '/admin/tenants/tenant-b/executions/secret-1');
    const nowhere = await engine.request('GET', '/admin/tenants/tenant-a/executions/never-was');
    expect([other.status, nowhere.status]).toEqual([404, 404]);
    expect((await other.json()).code).toBe('EXECUTION_NOT_FOUND');
  });

  it('answers 403 to a tenant-bound token on another tenant and to a submit token on admin routes', async () => {
    expect((await engine.request('GET', '/admin/tenants/tenant-a/executions/secret-1', { token: TENANT_A_TOKEN })).status).toBe(200);
    expect((await engine.request('GET', '/admin/tenants/tenant-b/executions/secret-1', { token: TENANT_A_TOKEN })).status).toBe(403);
    expect((await engine.request('GET', '/admin/tenants/tenant-a/executions/secret-1', { token: SUBMIT_TOKEN })).status).toBe(403);
    expect((await engine.request('POST', '/api/tenants/tenant-a/executions', { token: SUBMIT_TOKEN, body: { pipeline: 'nope' } })).status).toBe(422);
  });

  it('lists DLQ envelopes newest first, filtered and paged, without consuming them', async () => {
    const all = await (await engine.request('GET', '/admin/tenants/tenant-a/dlq')).json();
    expect(all.items.map((i: any) => i.envelope.executionId)).toEqual(['f3', 'f2', 'f1']);
    const onlyA = await (await engine.request('GET', '/admin/tenants/tenant-a/dlq?errorCode=BAD_A')).json();
    expect(onlyA.items.map((i: any) => i.envelope.executionId)).toEqual(['f3', 'f1']);
    const page1 = await (await engine.request('GET', '/admin/tenants/tenant-a/dlq?limit=2')).json();
    expect(page1.items).toHaveLength(2);
    const page2 = await (await engine.request('GET', `/admin/tenants/tenant-a/dlq?limit=2&cursor=${page1.nextCursor}`)).json();
    expect(page2.items.map((i: any) => i.envelope.executionId)).toEqual(['f1']);
    expect(page2.nextCursor).toBeNull();
    const again = await (await engine.request('GET', '/admin/tenants/tenant-a/dlq')).json();
    expect(again.items).toHaveLength(3);
    expect(again.items[0]).toMatchObject({ redriven: false, envelope: { terminalReason: 'non_retryable', errorCode: 'BAD_A' } });
  });

  it.each([
    ['/admin/tenants/tenant-a/dlq?terminalReason=oops', 'VALIDATION_FAILED'],
    ['/admin/tenants/tenant-a/dlq?limit=0', 'VALIDATION_FAILED'],
    ['/admin/tenants/tenant-a/dlq?cursor=not-a-cursor', 'INVALID_CURSOR'],
    ['/admin/tenants/tenant-a/executions?status=DONE', 'VALIDATION_FAILED'],
  ])('answers a bad query %s with 400 %s', async (path, code) => {
    const res = await engine.request('GET', path);
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe(code);
  });

  it('lists executions newest first with a status filter', async () => {
    const failed = await (await engine.request('GET', '/admin/tenants/tenant-a/executions?status=FAILED')).json();
    expect(failed.items.map((r: any) => r.executionId)).toEqual(['f3', 'f2', 'f1']);
    const page = await (await engine.request('GET', '/admin/tenants/tenant-a/executions?status=FAILED&limit=2')).json();
    const rest = await (await engine.request('GET', `/admin/tenants/tenant-a/executions?status=FAILED&limit=2&cursor=${page.nextCursor}`)).json();
    expect([...page.items, ...rest.items].map((r: any) => r.executionId)).toEqual(['f3', 'f2', 'f1']);
  });

  it('answers unknown routes with a problem, not an HTML page', async () => {
    const res = await engine.request('GET', '/admin/nothing-here');
    expect(res.status).toBe(404);
    expect((await res.json()).code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('OpenAPI document and reference page', () => {
  it('serves the generated document without a token (documentation, not data)', async () => {
    const res = await engine.request('GET', '/openapi.json', { token: null });
    expect(res.status).toBe(200);
    const document = await res.json();
    expect(document.openapi).toBe('3.1.0');
    const redrive = document.paths['/pipeline/admin/tenants/{tenantId}/executions/{executionId}/redrive'].post;
    expect(Object.keys(redrive.responses)).toEqual(expect.arrayContaining(['200', '202', '400', '401', '403', '404', '409', '413', '415', '422']));
    expect(JSON.stringify(redrive.requestBody)).toContain('RETRY_FAILED_COMMAND');
    expect(Object.keys(document.components.schemas)).toEqual(
      expect.arrayContaining(['ExecutionRecord', 'DlqEnvelope', 'RedriveAccepted', 'Problem', 'RejectList', 'Triage', 'PublishCheckpointResponse']),
    );
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining(['/pipeline/api/tenants/{tenantId}/checkpoints', '/pipeline/admin/tenants/{tenantId}/rejects', '/pipeline/admin/triage']),
    );
  });

  it('serves the reference page and its assets from local files', async () => {
    const page = await engine.service.app.request('/pipeline/docs');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/pipeline/docs/assets/swagger-ui-bundle.js');
    const bundle = await engine.service.app.request('/pipeline/docs/assets/swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
    expect((await engine.service.app.request('/pipeline/docs/assets/..%2Fpackage.json')).status).toBe(404);
  });

  it('answers with bodies that match the documented schemas', async () => {
    const started = await engine.request('POST', '/api/tenants/tenant-a/executions', { body: { pipeline: 'ok', executionId: 'schema-1', input: {} } });
    StartExecutionResponse.strict().parse(await started.json());
    await engine.waitFor('tenant-a', 'schema-1', ['SUCCEEDED']);
    ExecutionRecordDetail.strict().parse(await (await engine.request('GET', '/admin/tenants/tenant-a/executions/schema-1')).json());
    // A list's items are the record alone: nothing of the single read's extras.
    const list = ExecutionList.parse(await (await engine.request('GET', '/admin/tenants/tenant-a/executions')).json());
    for (const item of list.items) ExecutionRecordView.strict().parse(item);
    DlqList.parse(await (await engine.request('GET', '/admin/tenants/tenant-a/dlq')).json());
    ProblemSchema.parse(await (await engine.request('GET', '/admin/tenants/tenant-a/dlq?limit=0')).json());
  });
});
