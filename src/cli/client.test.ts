/**
 * The CLI calls a route by its declaration's key: the key, the path parameters, the query's
 * names and the body are type-checked against src/api/routes.ts, and the answer is typed by the
 * declared 2xx schema. The `@ts-expect-error` lines fail `tsc` if a wrong call compiles.
 */
import { describe, expect, it } from 'vitest';
import { AdminClient, pathOf, type OkBody } from './client';

/** Never run: what the compiler accepts and refuses. */
async function typed(client: AdminClient) {
  const params = { tenantId: 'acme', executionId: 'order-1' };
  const record = await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}', { params });
  const version: number = record.version;
  // @ts-expect-error -- the record has no `state`
  void record.state;
  // @ts-expect-error -- a route that is not declared
  await client.call('GET /admin/tenants/{tenantId}/nothing', { params });
  // @ts-expect-error -- the record route has an executionId parameter
  await client.call('GET /admin/tenants/{tenantId}/executions/{executionId}', { params: { tenantId: 'acme' } });
  // @ts-expect-error -- the list's query has no `state`
  await client.call('GET /admin/tenants/{tenantId}/executions', { params, query: { state: 'FAILED' } });
  const redrive = 'POST /admin/tenants/{tenantId}/executions/{executionId}/redrive';
  // @ts-expect-error -- the re-drive's body needs a reason
  await client.call(redrive, { params, body: { expectedVersion: 1 } });
  const plan = await client.call(
    redrive,
    { params, query: { dryRun: 'true' }, body: { expectedVersion: 1, reason: 'r', allowFailed: false } },
    { expect: 200 },
  );
  const admitted: boolean = plan.admitted;
  // @ts-expect-error -- 201 is not a 2xx the re-drive declares
  await client.call(redrive, { params, body: { expectedVersion: 1, reason: 'r', allowFailed: false } }, { expect: 201 });
  const accepted = await client.call(redrive, { params, body: { expectedVersion: 1, reason: 'r', allowFailed: false } }, { expect: 202 });
  const redriveId: string = accepted.redriveId;
  // @ts-expect-error -- a 202 answer is not a preview
  const wrong: OkBody<typeof redrive, 202>['admitted'] = true;
  return [version, admitted, redriveId, wrong];
}

describe('AdminClient.call', () => {
  it('fills the path parameters (encoded) and the query from a declared key', () => {
    expect(typeof typed).toBe('function');
    expect(pathOf('GET /admin/tenants/{tenantId}/executions/{executionId}', { tenantId: 'acme', executionId: 'a b/c' })).toEqual({
      method: 'GET',
      path: '/admin/tenants/acme/executions/a%20b%2Fc',
    });
    expect(pathOf('GET /admin/tenants/{tenantId}/dlq', { tenantId: 'acme' }, { limit: '5', cursor: undefined, errorCode: '' })).toEqual({
      method: 'GET',
      path: '/admin/tenants/acme/dlq?limit=5',
    });
    expect(() => pathOf('GET /admin/tenants/{tenantId}/dlq', {})).toThrow(/no value for \{tenantId\}/);
  });

  it('needs a tenant for a tenant route', () => {
    const client = new AdminClient({ url: 'http://127.0.0.1:1', token: 't', timeoutMs: 1000 });
    expect(() => client.tenant).toThrow(/no tenant/);
  });
});
