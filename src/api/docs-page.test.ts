import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { bearerAuth, sha256Hex } from './middleware/bearer-auth';
import { mountDocs, PACKAGE_VERSION, referenceDocument } from './docs-page';
import { createOpenApiDocument } from './openapi';
import { problemHandler } from './problem';

const document = createOpenApiDocument('pipeline');

describe('the API reference', () => {
  it("badges package.json's version, not a made-up one", () => {
    expect(PACKAGE_VERSION).toMatch(/^\d+\.\d+\.\d+/);
    expect(referenceDocument(document).info.version).toBe(PACKAGE_VERSION);
  });

  it('shows no ±2^53−1 integer bounds (Swagger UI made -9007199254740991 the example)', () => {
    expect(JSON.stringify(document)).toContain('9007199254740991'); // what zod writes
    expect(JSON.stringify(referenceDocument(document))).not.toContain('9007199254740991');
  });

  it('groups every operation under a declared tag', () => {
    const served = referenceDocument(document);
    const declared = served.tags.map((tag: any) => tag.name);
    const byTag = new Map<string, string[]>();
    for (const [path, item] of Object.entries<any>(served.paths))
      for (const [method, operation] of Object.entries<any>(item)) {
        expect(operation.tags?.length, `${method} ${path}`).toBeGreaterThan(0);
        for (const tag of operation.tags) {
          expect(declared).toContain(tag);
          byTag.set(tag, [...(byTag.get(tag) ?? []), `${method} ${path}`]);
        }
      }
    expect(byTag.get('submit')).toContain('post /pipeline/api/tenants/{tenantId}/executions');
    expect(byTag.get('redrive-jobs')).toContain('post /pipeline/admin/tenants/{tenantId}/redrive-jobs');
    expect(byTag.get('executions')).toContain('post /pipeline/admin/tenants/{tenantId}/executions/{executionId}/redrive');
    expect(byTag.get('other') ?? []).toEqual([]);
  });

  it('serves the document and the page without a token by default, and with one only when asked to', async () => {
    const open = new Hono();
    mountDocs(open, '/pipeline', document);
    expect((await open.request('/pipeline/openapi.json')).status).toBe(200);
    const page = await open.request('/pipeline/docs');
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).not.toMatch(/<script>/); // no inline script: the policy allows none
    const init = await (await open.request('/pipeline/docs/assets/init.js')).text();
    expect(init).toContain('persistAuthorization: true');
    expect(init).not.toContain('prompt(');

    const token = 'docs-token';
    const tokens = [{ sha256: sha256Hex(token), role: 'submit' as const }];
    const closed = new Hono();
    closed.onError(problemHandler());
    mountDocs(closed, '/pipeline', document, bearerAuth({ tokens, role: 'submit' }));
    expect((await closed.request('/pipeline/openapi.json')).status).toBe(401);
    expect((await closed.request('/pipeline/docs')).status).toBe(401);
    expect((await closed.request('/pipeline/openapi.json', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
  });

  it('sends a content security policy, no framing and nosniff on the page, the document and the assets', async () => {
    const app = new Hono();
    mountDocs(app, '/pipeline', document);
    for (const path of ['/pipeline/docs', '/pipeline/openapi.json', '/pipeline/docs/assets/init.js', '/pipeline/docs/assets/swagger-ui.css']) {
      const res = await app.request(path);
      expect([path, res.headers.get('x-content-type-options'), res.headers.get('x-frame-options')]).toEqual([path, 'nosniff', 'DENY']);
      expect(res.headers.get('content-security-policy'), path).toMatch(/frame-ancestors 'none'/);
    }
    const policy = (await app.request('/pipeline/docs')).headers.get('content-security-policy')!;
    expect(policy).toMatch(/script-src 'self'(;|$)/); // no 'unsafe-inline' for script
  });
});
