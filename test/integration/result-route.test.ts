/**
 * GET /api/tenants/{t}/executions/{e}/result: the final output of a SUCCEEDED execution for
 * a submit token of the tenant or an admin token, 409 EXECUTION_NOT_SUCCEEDED with the status
 * otherwise (after `wait`, a long poll that answers when the execution ends), 404 as usual,
 * and the output never in a log line.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/api/middleware/bearer-auth';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { ADMIN_TOKEN, startTestEngine, SUBMIT_TOKEN, TENANT_A_TOKEN, TEST_TOKENS, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

const SENTINEL = `RESULT-SENTINEL-${randomBytes(6).toString('hex')}`;
const TENANT_A_SUBMIT = 'test-tenant-a-submit-token';
let engine: TestEngine;
const gates = new Map<string, () => void>();

beforeAll(async () => {
  engine = await startTestEngine(
    [
      definePipeline({ name: 'echo', steps: [localStep('a', (input: { secret: string }) => ({ secret: input.secret, done: true }))] }),
      definePipeline({
        name: 'gated',
        steps: [
          localStep(
            'wait',
            (input: { secret: string }, ctx) => new Promise((resolve) => gates.set(ctx.executionId, () => resolve({ released: input.secret }))),
          ),
        ],
      }),
      definePipeline({
        name: 'broken',
        steps: [
          localStep('a', () => {
            throw new NonRetryableException('no', 'BROKEN');
          }),
        ],
      }),
    ],
    {
      'pipeline.auth.tokens': [...TEST_TOKENS, { sha256: sha256Hex(TENANT_A_SUBMIT), role: 'submit' as const, tenants: ['tenant-a'], name: 'tenant-a-submit' }],
    },
  );
});
afterAll(async () => {
  for (const release of gates.values()) release();
  await engine?.stop();
});

const result = (tenant: string, executionId: string, token = TENANT_A_SUBMIT, query = '') =>
  engine.request('GET', `/api/tenants/${tenant}/executions/${executionId}/result${query}`, { token });

describe('the result route', () => {
  it('answers the final output of a SUCCEEDED execution to a submit token of its tenant and to admin tokens, and logs none of it', async () => {
    await engine.start('tenant-a', { pipeline: 'echo', executionId: 'done-1', input: { secret: SENTINEL } });
    await engine.waitFor('tenant-a', 'done-1', ['SUCCEEDED']);
    for (const token of [TENANT_A_SUBMIT, SUBMIT_TOKEN, ADMIN_TOKEN, TENANT_A_TOKEN]) {
      const res = await result('tenant-a', 'done-1', token);
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toMatchObject({
        tenantId: 'tenant-a',
        executionId: 'done-1',
        pipeline: 'echo',
        status: 'SUCCEEDED',
        output: { secret: SENTINEL, done: true },
      });
    }
    expect(JSON.stringify(engine.logs)).not.toContain(SENTINEL);
  });

  it('refuses a token of another tenant (403) and no token (401)', async () => {
    await engine.start('tenant-b', { pipeline: 'echo', executionId: 'done-b', input: { secret: 'b' } });
    await engine.waitFor('tenant-b', 'done-b', ['SUCCEEDED']);
    expect((await result('tenant-b', 'done-b', TENANT_A_SUBMIT)).status).toBe(403);
    expect((await result('tenant-b', 'done-b', TENANT_A_TOKEN)).status).toBe(403);
    const anonymous = await engine.request('GET', '/api/tenants/tenant-b/executions/done-b/result', { token: null });
    expect(anonymous.status).toBe(401);
  });

  it('answers 404 for an execution of another tenant or none, and 400 for a wait over 60 s', async () => {
    expect((await (await result('tenant-a', 'done-b')).json()).code).toBe('EXECUTION_NOT_FOUND');
    expect((await result('tenant-a', 'nowhere')).status).toBe(404);
    const tooLong = await result('tenant-a', 'done-1', TENANT_A_SUBMIT, '?wait=2m');
    expect([tooLong.status, (await tooLong.json()).code]).toEqual([400, 'VALIDATION_FAILED']);
  });

  it('answers 409 with the status of an execution still running, and the output once a long poll sees it end', async () => {
    await engine.start('tenant-a', { pipeline: 'gated', executionId: 'gated-1', input: { secret: 'g' } });
    await engine.waitFor('tenant-a', 'gated-1', ['RUNNING']);
    const now = await result('tenant-a', 'gated-1');
    expect(now.status).toBe(409);
    expect(await now.json()).toMatchObject({ status: 409, code: 'EXECUTION_NOT_SUCCEEDED', executionStatus: 'RUNNING' });

    const waiting = result('tenant-a', 'gated-1', TENANT_A_SUBMIT, '?wait=60s');
    // Released only once the step runs; the long poll answers when the commit lands.
    await until(() => gates.has('gated-1'), 30_000, 'the gated step to run');
    gates.get('gated-1')!();
    const answered = await waiting;
    expect(answered.status).toBe(200);
    expect((await answered.json()).output).toEqual({ released: 'g' });
  });

  it('answers a FAILED execution 409 FAILED without waiting for a change that only a re-drive makes', async () => {
    await engine.start('tenant-a', { pipeline: 'broken', executionId: 'broken-1', input: {} });
    await engine.waitFor('tenant-a', 'broken-1', ['FAILED']);
    const res = await result('tenant-a', 'broken-1', TENANT_A_SUBMIT, '?wait=60s');
    expect(await res.json()).toMatchObject({ code: 'EXECUTION_NOT_SUCCEEDED', executionStatus: 'FAILED' });
  });
});
