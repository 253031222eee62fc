/**
 * The API and its document agree (issue 25, "The API and its document disagree"), each
 * point against the real service on loopback, real Postgres and the dev server:
 * 415 before 413, an optional control body, what the document says (history's
 * pipelineVersion, SELECTION_EMPTY's excluded, limit ≥ 1, the window format, required
 * bodies, the storable-text rule, "intent requires allowFailed"), values Postgres would
 * refuse stopped by validation with no error-level log, the slow-header timeout from
 * configuration, and 405 with Allow for a wrong method.
 */
import http from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { declaredRoutes } from '../../src/api/openapi';
import { encodeCursor } from '../../src/api/request';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';

let engine: TestEngine;
let port = 0;
let document: any;

beforeAll(async () => {
  engine = await startTestEngine(
    [],
    { 'pipeline.server.port': 0, 'pipeline.server.headers-timeout': '1s', 'pipeline.server.request-timeout': '5s' },
    { worker: false, http: true },
  );
  port = engine.service.ports.http!;
  document = await (await fetch(`http://127.0.0.1:${port}/pipeline/openapi.json`)).json();
});
afterAll(async () => {
  await engine?.stop();
});

/** A raw HTTP/1.1 request on loopback (no client adds or drops a header). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: `/pipeline${path}`, method, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...headers } });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const errorLines = () => engine.logs.filter((line) => line.level >= 50 || line.event === 'http_unhandled_error');

describe('the order of the body checks', () => {
  it('an oversized body that is not JSON answers 415, not 413 (DESIGN: media type before size)', async () => {
    const res = await raw('POST', '/api/tenants/acme/executions', { 'content-type': 'text/plain' }, Buffer.alloc(100_000, 0x61));
    expect([res.status, res.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    const json = await raw('POST', '/api/tenants/acme/executions', { 'content-type': 'application/json' }, Buffer.alloc(100_000, 0x20));
    expect([json.status, json.body.code]).toEqual([413, 'BODY_TOO_LARGE']);
  });
});

describe('pause / resume / abort: the body is optional', () => {
  it.each(['pause', 'resume', 'abort'])('%s with Content-Type: application/json and an empty body reads as no reason', async (action) => {
    // No Content-Length at all (what curl -X POST -H 'Content-Type: application/json' sends), and Content-Length: 0.
    const variants: Record<string, string>[] = [{ 'content-type': 'application/json' }, { 'content-type': 'application/json', 'content-length': '0' }];
    for (const headers of variants) {
      const res = await raw('POST', `/admin/tenants/acme/redrive-jobs/no-such-job/${action}`, headers);
      expect([res.status, res.body.code]).toEqual([404, 'JOB_NOT_FOUND']);
    }
    const bad = await raw('POST', `/admin/tenants/acme/redrive-jobs/no-such-job/${action}`, { 'content-type': 'application/json' }, Buffer.from('{"reason":'));
    expect([bad.status, bad.body.code]).toEqual([400, 'INVALID_JSON']);
  });
});

describe('one declaration per route', () => {
  it('the app mounts exactly the declared routes (the codec pair only when pipeline.codec.keys is set), and the document lists them', () => {
    const own = /^(GET|POST) \/(pipeline\/(openapi\.json|docs.*)|metrics)$/; // the document and its page, Prometheus: not API operations
    const mounted = new Set(engine.service.app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}`));
    const declared = declaredRoutes('pipeline');
    expect([...mounted].filter((route) => !own.test(route) && !declared.includes(route))).toEqual([]);
    expect(declared.filter((route) => !mounted.has(route))).toEqual(['POST /codec/decode', 'POST /codec/encode']);
    const documented = Object.entries(document.paths).flatMap(([path, item]: [string, any]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual([...declared].sort());
  });
});

describe('the document says what the handlers enforce', () => {
  const path = (p: string) => document.paths[`/pipeline${p}`];
  const schemaOf = (ref: any): any => (ref?.$ref ? document.components.schemas[ref.$ref.split('/').at(-1)] : ref);

  it("history's pipelineVersion and SELECTION_EMPTY's excluded are in their schemas", () => {
    const story = schemaOf(path('/admin/tenants/{tenantId}/executions/{executionId}/history').get.responses['200'].content['application/json'].schema);
    expect(story.properties.pipelineVersion).toMatchObject({ type: 'integer' });
    expect(story.required).toContain('pipelineVersion');
    const problem = document.components.schemas.Problem;
    expect(problem.properties.excluded).toMatchObject({ type: 'object' });
    expect(problem.properties.jobStatus.enum).toContain('ABORTED');
  });

  it('limit is 1–500 and window a duration from 1m to 24h, by pattern', () => {
    const params = path('/admin/tenants/{tenantId}/executions').get.parameters;
    const limit = new RegExp(params.find((p: any) => p.name === 'limit').schema.pattern);
    expect(['1', '50', '500'].every((v) => limit.test(v))).toBe(true);
    expect(['0', '501', '01', '-1', '1.0'].some((v) => limit.test(v))).toBe(false);
    const window = new RegExp(path('/admin/triage').get.parameters.find((p: any) => p.name === 'window').schema.pattern);
    expect(['15m', '1h', '90s', 'PT15M', '60000'].every((v) => window.test(v))).toBe(true);
    expect(['15 minutes', 'PT', '', '1w'].some((v) => window.test(v))).toBe(false);
    // The range is in the pattern, not only in the description.
    expect(['0', '59s', '59999', '25h', '2d', 'PT59S', 'PT25H'].filter((v) => window.test(v))).toEqual([]);
    expect(['1m', '24h', '1d', '1440m', '86400000', 'PT24H'].every((v) => window.test(v))).toBe(true);
  });

  it('bodies that routes cannot do without are required; the control body is not', () => {
    expect(path('/api/tenants/{tenantId}/executions').post.requestBody.required).toBe(true);
    expect(path('/admin/tenants/{tenantId}/executions/{executionId}/redrive').post.requestBody.required).toBe(true);
    expect(path('/admin/tenants/{tenantId}/redrive-jobs').post.requestBody.required).toBe(true);
    expect(path('/admin/tenants/{tenantId}/redrive-jobs/{jobId}/pause').post.requestBody.required).toBe(false);
  });

  it('stored text refuses NUL and lone surrogates by pattern, and intent requires allowFailed', () => {
    const redrive = schemaOf(path('/admin/tenants/{tenantId}/executions/{executionId}/redrive').post.requestBody.content['application/json'].schema);
    const reason = redrive.properties.reason;
    const patterns = [reason.pattern, ...(reason.allOf ?? []).map((p: any) => p.pattern)].filter(Boolean).map((p: string) => new RegExp(p, 'u'));
    const allowed = (value: string) => patterns.every((p) => p.test(value));
    expect(allowed('ledger fixed ✓ 😀')).toBe(true);
    expect(allowed('a\u0000b')).toBe(false);
    expect(allowed('a\ud800b')).toBe(false);
    expect(allowed('   ')).toBe(false);
    expect(redrive.allOf).toContainEqual({
      anyOf: [{ not: { required: ['intent'] } }, { required: ['allowFailed'], properties: { allowFailed: { const: true } } }],
    });
  });
});

describe('values Postgres would refuse are refused by validation (400), with no error-level log', () => {
  it('a job-list cursor whose jobId holds a NUL or a lone surrogate is INVALID_CURSOR', async () => {
    for (const jobId of ['a\u0000b', 'a\ud800b']) {
      const cursor = encodeCursor({ createdAt: '2026-11-21T12:00:00.000Z', jobId });
      const res = await engine.request('GET', `/admin/tenants/acme/redrive-jobs?cursor=${cursor}`);
      expect([res.status, (await res.json()).code]).toEqual([400, 'INVALID_CURSOR']);
    }
    expect(errorLines()).toEqual([]);
  });

  it('selection dates with an offset beyond ±15:59 or the year 0000 are VALIDATION_FAILED', async () => {
    for (const from of ['2026-11-21T12:00:00+16:00', '2026-11-21T12:00:00-23:59', '0000-01-01T00:00:00Z']) {
      const res = await engine.request('POST', '/admin/tenants/acme/redrive-jobs?dryRun=true', {
        body: { selection: { from }, reason: 'check', allowFailed: true },
      });
      const body = await res.json();
      expect([res.status, body.code, body.issues[0].path]).toEqual([400, 'VALIDATION_FAILED', 'selection.from']);
    }
    const fine = await engine.request('POST', '/admin/tenants/acme/redrive-jobs?dryRun=true', {
      body: { selection: { from: '2026-11-21T12:00:00+15:59' }, reason: 'check', allowFailed: true },
    });
    expect([fine.status, (await fine.json()).code]).toEqual([422, 'SELECTION_EMPTY']);
    expect(errorLines()).toEqual([]);
  });
});

describe('the HTTP server', () => {
  it('answers 408 and closes a connection whose headers do not arrive within pipeline.server.headers-timeout', async () => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (d) => (answer += d));
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'); // and never the blank line
    await new Promise((resolve) => socket.once('close', resolve));
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('answers a wrong method with 405 and Allow, an unknown path with 404', async () => {
    const get = await raw('GET', '/api/tenants/acme/checkpoints', {});
    expect([get.status, get.body.code, get.headers.allow]).toEqual([405, 'METHOD_NOT_ALLOWED', 'POST']);
    const del = await raw('DELETE', '/admin/tenants/acme/executions', {});
    expect([del.status, del.headers.allow]).toEqual([405, 'GET, HEAD']);
    const none = await raw('GET', '/admin/tenants/acme/nothing-here', {});
    expect([none.status, none.body.code]).toEqual([404, 'ROUTE_NOT_FOUND']);
    // A route of this very method that finds nothing (an unknown asset) is still 404.
    const asset = await raw('GET', '/docs/assets/no-such-file.js', {});
    expect(asset.status).toBe(404);
  });
});
