/**
 * A route answers only what its declaration (routes.ts) documents. At compile time `answer`
 * accepts a declared JSON status with a body of its schema (the `@ts-expect-error` lines below
 * fail `tsc` if an undeclared answer compiles); at run time, under the test runner, a planted
 * undeclared status, a body its schema refuses, or a thrown error of an undeclared status fails
 * the request with UndeclaredAnswerError.
 */
import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { PipelineError } from '../errors';
import { answerChecks, honoPath, mount, UndeclaredAnswerError, type Handler } from './mount';
import { problemHandler } from './problem';
import { createOpenApiDocument, declaredRoutes } from './openapi';

/** An app serving one declared route with `handler`, keeping what its error handler saw. */
function serve<K extends 'GET /healthz' | 'GET /readyz'>(key: K, handler: Handler<K>) {
  const errors: unknown[] = [];
  const app = new Hono();
  const problems = problemHandler();
  app.onError((err, c) => {
    errors.push(err);
    return problems(err, c);
  });
  mount(app, key, handler);
  return { errors, get: async (path: string) => app.request(path) };
}

afterEach(() => {
  answerChecks.enabled = true;
});

describe('mount: a handler answers what its declaration documents', () => {
  it('checks answers under the test runner', () => {
    expect(answerChecks.enabled).toBe(true);
  });

  it('a declared status with a body of its schema is answered', async () => {
    const { errors, get } = serve('GET /healthz', (_c, _inputs, answer) => answer(200, { status: 'ok' }));
    const res = await get('/healthz');
    expect([res.status, await res.json(), errors]).toEqual([200, { status: 'ok' }, []]);
  });

  it('a planted undeclared status fails the request (and does not compile)', async () => {
    // @ts-expect-error -- /healthz declares 200 only
    const { errors, get } = serve('GET /healthz', (_c, _inputs, answer) => answer(202, { status: 'ok' }));
    expect((await get('/healthz')).status).toBe(500);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(UndeclaredAnswerError);
    expect(String(errors[0])).toMatch(/GET \/healthz answered 202, which its declaration does not document/);
  });

  it('a planted body its schema refuses fails the request (and does not compile)', async () => {
    // @ts-expect-error -- HealthView's status is the text 'ok'
    const { errors, get } = serve('GET /healthz', (_c, _inputs, answer) => answer(200, { status: 1 }));
    expect((await get('/healthz')).status).toBe(500);
    expect(errors[0]).toBeInstanceOf(UndeclaredAnswerError);
    expect(String(errors[0])).toMatch(/with a body its schema refuses: status:/);
  });

  it('a thrown error of a status the route does not declare fails the request; a declared one is answered', async () => {
    const notReady = () => {
      throw new PipelineError('not ready: temporal', 'NOT_READY', { checks: {}, errors: {} });
    };
    const health = serve('GET /healthz', notReady);
    expect((await health.get('/healthz')).status).toBe(500);
    expect(String(health.errors[0])).toMatch(/GET \/healthz answered 503 NOT_READY, which its declaration does not document/);
    const ready = serve('GET /readyz', notReady);
    const res = await ready.get('/readyz');
    expect([res.status, (await res.json()).code]).toEqual([503, 'NOT_READY']);
  });

  it('without the checks (production) the types alone hold the handler: the planted answer goes out', async () => {
    answerChecks.enabled = false;
    // @ts-expect-error -- as above: only a cast gets it past the compiler
    const { get } = serve('GET /healthz', (_c, _inputs, answer) => answer(202, { status: 'ok' }));
    expect((await get('/healthz')).status).toBe(202);
  });

  it('a path outside the sub-app it is mounted on is refused at start', () => {
    expect(() => honoPath('/api/tenants/{tenantId}/executions', '/admin')).toThrow(/not under \/admin/);
    expect(honoPath('/admin/tenants/{tenantId}/redrive-jobs/{jobId}', '/admin')).toBe('/tenants/:tenantId/redrive-jobs/:jobId');
  });
});

describe('the document is generated from the declarations', () => {
  it('lists every declared route and nothing else', () => {
    const document = createOpenApiDocument('pipeline');
    const documented = Object.entries(document.paths ?? {}).flatMap(([path, item]) => Object.keys(item ?? {}).map((m) => `${m.toUpperCase()} ${path}`));
    expect(documented.sort()).toEqual(declaredRoutes('pipeline').sort());
  });

  it('is the document PATHS generated before the declarations (a snapshot of main at f92c385, JSON byte for byte)', async () => {
    // A change to the document on purpose: `npx vitest run -u src/api/mount.test.ts` rewrites the snapshot (review its diff).
    await expect(`${JSON.stringify(createOpenApiDocument('pipeline'), null, 2)}\n`).toMatchFileSnapshot('./__snapshots__/openapi-document.json');
  });
});
