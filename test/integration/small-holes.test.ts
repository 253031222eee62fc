/**
 * Smaller holes, each as it was once found: a correlationId no header can carry, a
 * local header-encoding error taken for a network failure, a submit token reading a
 * record through a repeated executionKey, ambiguous query parameters, non-integer
 * literals read as integers, and a lower-case Bearer scheme. Real app, Postgres, dev server.
 */
import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../src/log';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { callGrpc } from '../../src/transports/grpc';
import { RemoteFailureError, type RemoteCallContext } from '../../src/transports/remote';
import { callRest } from '../../src/transports/rest';
import { ADMIN_TOKEN, startTestEngine, SUBMIT_TOKEN, type TestEngine } from '../helpers/engine';

let engine: TestEngine;

beforeAll(async () => {
  engine = await startTestEngine([
    definePipeline({
      name: 'fails',
      steps: [
        localStep('x', () => {
          throw new NonRetryableException('card declined for SECRET-PAN', 'DECLINED');
        }),
      ],
    }),
  ]);
});
afterAll(async () => {
  await engine?.stop();
});

async function failedExecution(executionId: string) {
  await engine.start('acme', { pipeline: 'fails', executionId, executionKey: `key-${executionId}` });
  const record = await engine.waitFor('acme', executionId, ['FAILED']);
  await engine.service.client.workflow
    .getHandle(record.workflowId)
    .result()
    .catch(() => undefined);
  return record;
}

const rowCount = async () => (await engine.service.db.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_record')).rows[0].n;

describe('correlationId', () => {
  it.each(['注文-1', 'line\nbreak', 'x\r\nX-Injected: 1', ' padded'])(
    'refuses %j at admission with 400 naming the field, and creates nothing',
    async (correlationId) => {
      const before = await rowCount();
      const res = await engine.request('POST', '/api/tenants/acme/executions', { body: { pipeline: 'fails', correlationId } });
      const problem = await res.json();
      expect([res.status, problem.code]).toEqual([400, 'VALIDATION_FAILED']);
      expect(problem.issues.map((i: { path: string }) => i.path)).toEqual(['correlationId']);
      expect(await rowCount()).toBe(before);
    },
  );

  it('a header the transport cannot encode fails as non_retryable INVALID_REQUEST_HEADER, never as a network failure, and sends nothing', async () => {
    let arrived = 0;
    const server = createServer((_req, res) => {
      arrived++;
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/transition`;
    const ctx: RemoteCallContext = {
      tenantId: 'acme',
      executionId: 'e',
      correlationId: '注文-1',
      attempt: 1,
      transitionKey: 'e:0:1',
      idempotencyKey: 'acme/e:0:1',
      signal: new AbortController().signal,
      log: createLog({ level: 'silent' }),
    };
    try {
      const rest = await callRest(url, {}, 5000, ctx).catch((err: unknown) => err);
      expect(rest).toBeInstanceOf(RemoteFailureError);
      expect(rest).toMatchObject({ code: 'INVALID_REQUEST_HEADER', retryable: false });
      const grpc = await callGrpc('127.0.0.1:1', {}, 5000, { ...ctx, correlationId: 'bad\nvalue' }).catch((err: unknown) => err);
      expect(grpc).toMatchObject({ code: 'INVALID_REQUEST_METADATA', retryable: false });
      expect(arrived).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('a repeated executionKey', () => {
  it('tells a submit token only that the execution exists; an admin token gets the record', async () => {
    const record = await failedExecution('known-key-1');
    const repeat = (token: string) =>
      engine.request('POST', '/api/tenants/acme/executions', { token, body: { pipeline: 'fails', executionKey: 'key-known-key-1' } });
    const submit = await repeat(SUBMIT_TOKEN);
    expect(submit.status).toBe(200);
    const seen = await submit.json();
    expect(seen).toEqual({
      tenantId: 'acme',
      executionId: 'known-key-1',
      executionKey: 'key-known-key-1',
      pipeline: 'fails',
      existing: true,
      dispatch: 'existing',
    });
    expect(JSON.stringify(seen)).not.toContain('SECRET-PAN');
    const admin = await (await repeat(ADMIN_TOKEN)).json();
    expect(admin).toMatchObject({ executionId: 'known-key-1', status: 'FAILED', runId: record.runId });
  });
});

describe('ambiguous input', () => {
  it('refuses ?dryRun=false&dryRun=true with 400 and re-drives nothing', async () => {
    const record = await failedExecution('ambiguous-1');
    const res = await engine.request('POST', '/admin/tenants/acme/executions/ambiguous-1/redrive?dryRun=false&dryRun=true', {
      body: { expectedVersion: record.version, reason: 'which one?', allowFailed: true },
    });
    const problem = await res.json();
    expect([res.status, problem.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(problem.issues).toEqual([expect.objectContaining({ path: 'dryRun' })]);
    expect((await engine.service.store.get('acme', 'ambiguous-1'))?.version).toBe(record.version);
  });

  it('reads expectedVersion written as 10.0 or 1e1 as the integer it is, as JSON Schema does', async () => {
    const record = await failedExecution('literal-1');
    const send = (literal: string) =>
      engine.request('POST', '/admin/tenants/acme/executions/literal-1/redrive?dryRun=true', {
        body: `{"expectedVersion": ${literal}, "reason": "the version is ${record.version}.0", "allowFailed": true}`,
      });
    for (const literal of [String(record.version), `${record.version}.0`, `${record.version}e0`, `${record.version}.00`]) {
      expect([literal, await (await send(literal)).json()]).toEqual([literal, expect.objectContaining({ admitted: true })]);
    }
    // A fraction is not an integer, however it is written.
    const res = await send(`${record.version}.5`);
    const problem = await res.json();
    expect([res.status, problem.code, problem.issues[0].path]).toEqual([400, 'VALIDATION_FAILED', 'expectedVersion']);
  });

  it('refuses a list limit that is not a whole number', async () => {
    for (const limit of ['10.0', '1e1', '-5', 'ten']) {
      expect((await engine.request('GET', `/admin/tenants/acme/executions?limit=${limit}`)).status).toBe(400);
    }
    expect((await engine.request('GET', '/admin/tenants/acme/executions?limit=10')).status).toBe(200);
  });
});

describe('the Bearer scheme', () => {
  it('is case-insensitive (RFC 7235)', async () => {
    const res = await engine.request('GET', '/admin/tenants/acme/executions', { headers: { authorization: `bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(200);
  });
});
