import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { problemHandler } from '../problem';
import { bearerAuth, sha256Hex, type AuthEnv } from './bearer-auth';

function app() {
  const tokens = [
    { sha256: sha256Hex('admin-secret'), role: 'admin' as const },
    { sha256: sha256Hex('tenant-a-secret'), role: 'admin' as const, tenants: ['a'] },
    { sha256: sha256Hex('submit-secret'), role: 'submit' as const },
    { sha256: sha256Hex('repair-secret'), role: 'repair' as const, readPayloads: true },
  ];
  const hono = new Hono<AuthEnv>();
  hono.onError(problemHandler());
  hono.get('/admin/tenants/:tenantId/x', bearerAuth({ tokens, role: 'admin' }), (c) => c.json({ who: c.get('principal').name }));
  for (const path of [
    '/admin/tenants/:tenantId/executions/:e/redrive',
    '/admin/tenants/:tenantId/executions/:e/fork',
    '/admin/tenants/:tenantId/redrive-jobs',
  ]) {
    hono.post(path, bearerAuth({ tokens, role: 'admin' }), (c) => c.json({ role: c.get('principal').role, readPayloads: c.get('principal').readPayloads }));
  }
  hono.post('/api/tenants/:tenantId/executions', bearerAuth({ tokens, role: 'submit' }), (c) => c.json({}));
  return hono;
}
const get = (path: string, auth?: string) => app().request(path, { headers: auth ? { authorization: auth } : {} });

describe('bearerAuth', () => {
  it('refuses a malformed configured digest when it is created, naming the token', () => {
    for (const sha256 of ['abc', sha256Hex('x').slice(0, 63), `${sha256Hex('x').slice(0, 63)}z`, '']) {
      expect(() => bearerAuth({ tokens: [{ sha256, role: 'admin', name: 'ops' }], role: 'admin' })).toThrow(/token ops has no valid sha256/);
    }
    expect(() => bearerAuth({ tokens: [{ sha256: sha256Hex('x').toUpperCase(), role: 'admin' }], role: 'admin' })).not.toThrow();
  });
  it('rejects a missing token with 401 and a Bearer challenge', async () => {
    const res = await get('/admin/tenants/a/x');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect((await res.json()).code).toBe('UNAUTHORIZED');
  });
  it('rejects a wrong token with 401', async () => {
    expect((await get('/admin/tenants/a/x', 'Bearer nope')).status).toBe(401);
    expect((await get('/admin/tenants/a/x', 'Basic YWRtaW4=')).status).toBe(401);
  });
  it('accepts an admin token', async () => {
    const res = await get('/admin/tenants/a/x', 'Bearer admin-secret');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ who: 'token-0' });
  });
  it('gives 403 to a token for tenant a on tenant b', async () => {
    expect((await get('/admin/tenants/a/x', 'Bearer tenant-a-secret')).status).toBe(200);
    const res = await get('/admin/tenants/b/x', 'Bearer tenant-a-secret');
    expect(res.status).toBe(403);
    expect((await res.json()).code).toBe('FORBIDDEN');
  });
  it('takes the scheme case-insensitively (RFC 7235), and no other scheme', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) expect((await get('/admin/tenants/a/x', `${scheme} admin-secret`)).status).toBe(200);
    expect((await get('/admin/tenants/a/x', 'Bearer  admin-secret')).status).toBe(200);
    expect((await get('/admin/tenants/a/x', 'Bearerx admin-secret')).status).toBe(401);
    expect((await get('/admin/tenants/a/x', 'bearer')).status).toBe(401);
  });
  it('gives 403 to a submit-only token on the admin API', async () => {
    expect((await get('/admin/tenants/a/x', 'Bearer submit-secret')).status).toBe(403);
  });
  it('lets a repair token read the admin API and re-drive or fork, and refuses it the rest of the admin API and the submit API', async () => {
    const post = (path: string) => app().request(path, { method: 'POST', headers: { authorization: 'Bearer repair-secret' } });
    expect((await get('/admin/tenants/a/x', 'Bearer repair-secret')).status).toBe(200);
    const redrive = await post('/admin/tenants/a/executions/e1/redrive');
    expect(await redrive.json()).toEqual({ role: 'repair', readPayloads: true });
    expect((await post('/admin/tenants/a/executions/e1/fork')).status).toBe(200);
    for (const path of ['/admin/tenants/a/redrive-jobs', '/api/tenants/a/executions']) {
      const res = await post(path);
      expect({ path, status: res.status, code: (await res.json()).code }).toEqual({ path, status: 403, code: 'FORBIDDEN' });
    }
  });
});
