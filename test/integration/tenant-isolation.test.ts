/**
 * Two tenants that choose the same executionId never share a downstream identity: one
 * tenant's run of order-X, then the other's, over REST and gRPC in both orders, concurrent deliveries of the
 * "same" identity for two tenants, the key a LOCAL and a FUNCTION step are given, and
 * dedupe rows from before the keys were tenant-qualified (never run again, never handed
 * to anyone). Real loopback kit servers, the real engine, dev server and Postgres.
 */
import { serve, type ServerType } from '@hono/node-server';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, functionStep, grpcStep, localStep, restStep } from '../../src/pipeline/define';
import { grpcClient, lookupGrpc } from '../../src/transports/grpc';
import {
  createGrpcTransitionWorker,
  createRestTransitionWorker,
  ensureDedupeSchema,
  type GrpcTransitionWorker,
  type TransitionCall,
} from '@pipeline-orchestrator/worker-kit';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { legacyDedupeRows } from '../helpers/unreachable-states';

type Kind = 'rest' | 'grpc';
let engine: TestEngine;
const workerDbs = {} as Record<Kind, TestDatabase>;
let restServer: ServerType;
let restBase = '';
let grpcWorker: GrpcTransitionWorker;
let grpcAddress = '';
/** handler runs by kit, tenant and transition identity */
const runs: Record<string, number> = {};

function handlerFor(kind: Kind) {
  return async (input: unknown, call: TransitionCall) => {
    const key = `${kind}|${call.tenantId}|${call.transitionKey}`;
    runs[key] = (runs[key] ?? 0) + 1;
    const order = input as { payee?: string; amount?: number; slow?: boolean };
    if (order.slow) await new Promise((resolve) => setTimeout(resolve, 300));
    return { payee: order.payee ?? null, amount: order.amount ?? null, key: call.idempotencyKey };
  };
}

beforeAll(async () => {
  workerDbs.rest = await createTestDatabase();
  workerDbs.grpc = await createTestDatabase();
  await ensureDedupeSchema(workerDbs.rest.db);
  await ensureDedupeSchema(workerDbs.grpc.db);
  const rest = createRestTransitionWorker({ db: workerDbs.rest.db, platform: 'iso-rest/1', handler: handlerFor('rest'), duplicateWaitMs: 5000 });
  restServer = serve({ fetch: rest.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => restServer.once('listening', resolve));
  restBase = `http://127.0.0.1:${(restServer.address() as { port: number }).port}`;
  grpcWorker = createGrpcTransitionWorker({ db: workerDbs.grpc.db, platform: 'iso-grpc/1', handler: handlerFor('grpc'), duplicateWaitMs: 5000 });
  grpcAddress = await grpcWorker.listen();
  engine = await startTestEngine([
    definePipeline({
      name: 'pay-rest',
      steps: [
        restStep('notify', { url: `${restBase}/transition`, dispositionUrl: `${restBase}/transition/{idempotencyKey}` }, { command: true, timeoutMs: 10_000 }),
      ],
    }),
    definePipeline({ name: 'pay-grpc', steps: [grpcStep('notify', { address: grpcAddress, lookup: true }, { command: true, timeoutMs: 10_000 })] }),
    definePipeline({
      name: 'keys',
      steps: [
        localStep('local', (_input: unknown, ctx) => ({ local: ctx.idempotencyKey, localTransition: ctx.transitionKey })),
        functionStep('fn', (event: Record<string, unknown>, context) => ({ ...event, fn: context.invocationId })),
      ],
    }),
  ]);
});
afterAll(async () => {
  await engine?.stop();
  await new Promise((resolve) => restServer?.close(resolve));
  await grpcWorker?.stop();
  await workerDbs.rest?.drop();
  await workerDbs.grpc?.drop();
});

const pipelineOf = (kind: Kind) => (kind === 'rest' ? 'pay-rest' : 'pay-grpc');

async function runOrder(kind: Kind, tenantId: string, executionId: string, input: Record<string, unknown>) {
  await engine.start(tenantId, { pipeline: pipelineOf(kind), executionId, input });
  return engine.waitFor(tenantId, executionId, ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 30_000);
}

function deliverRest(key: string, body: unknown) {
  return fetch(`${restBase}/transition`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify(body),
  });
}

function deliverGrpc(key: string, body: unknown): Promise<{ output?: any; code?: number }> {
  return new Promise((resolve) => {
    const md = new grpc.Metadata();
    md.set('idempotency-key', key);
    grpcClient(grpcAddress).Invoke({ input_json: JSON.stringify(body) }, md, (err: grpc.ServiceError | null, res: { output_json: string }) =>
      resolve(err ? { code: err.code } : { output: JSON.parse(res.output_json) }),
    );
  });
}

describe.each(['rest', 'grpc'] as const)('tenant-qualified keys over %s', (kind) => {
  it.each([
    ['evil', 't1'],
    ['t1', 'evil'],
  ])('%s starts order-X first, %s second, and each keeps its own result', async (first, second) => {
    const executionId = `order-${kind}-${first}-first`;
    const payee = { evil: 'EVIL-ACCOUNT-666', t1: 'T1-REAL-PAYEE' } as Record<string, string>;
    const amount = { evil: 1, t1: 500 } as Record<string, number>;
    const a = await runOrder(kind, first, executionId, { payee: payee[first], amount: amount[first] });
    const b = await runOrder(kind, second, executionId, { payee: payee[second], amount: amount[second] });
    expect([a.status, b.status]).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    expect(a.segmentInput).toEqual({ payee: payee[first], amount: amount[first], key: `${first}/${executionId}:0:1` });
    expect(b.segmentInput).toEqual({ payee: payee[second], amount: amount[second], key: `${second}/${executionId}:0:1` });
    expect((await engine.effects.get(second, executionId, 0))?.result).toEqual(b.segmentInput);
    expect(runs[`${kind}|${first}|${executionId}:0:1`]).toBe(1);
    expect(runs[`${kind}|${second}|${executionId}:0:1`]).toBe(1);
    // Records and effects keep the spec's transitionKey beside tenantId.
    expect((await engine.effects.get(second, executionId, 0))?.transitionKey).toBe(`${executionId}:0:1`);
    // The disposition lookup answers per tenant: a third tenant's same identity was never recorded.
    const recorded = (tenant: string) =>
      kind === 'rest'
        ? fetch(`${restBase}/transition/${encodeURIComponent(`${tenant}/${executionId}:0:1`)}`).then(
            async (r) => ((await r.json()) as { recorded: boolean }).recorded,
          )
        : lookupGrpc(grpcAddress, `${tenant}/${executionId}:0:1`, 5000).then((r) => r.recorded);
    expect([await recorded(first), await recorded(second), await recorded('nobody')]).toEqual([true, true, false]);
  });

  it('two tenants starting the same executionId at once each run their own handler exactly once', async () => {
    const executionId = `order-${kind}-concurrent`;
    const [a, b] = await Promise.all([
      runOrder(kind, 'evil', executionId, { payee: 'EVIL', amount: 1, slow: true }),
      runOrder(kind, 't1', executionId, { payee: 'T1', amount: 500, slow: true }),
    ]);
    expect(a.segmentInput).toMatchObject({ payee: 'EVIL', amount: 1 });
    expect(b.segmentInput).toMatchObject({ payee: 'T1', amount: 500 });
    expect([runs[`${kind}|evil|${executionId}:0:1`], runs[`${kind}|t1|${executionId}:0:1`]]).toEqual([1, 1]);
  });

  it('concurrent duplicate deliveries of two tenants\' "same" identity: one handler run per tenant, each answered with its own result', async () => {
    const deliver =
      kind === 'rest'
        ? async (key: string, body: unknown) => (await deliverRest(key, body)).json()
        : async (key: string, body: unknown) => (await deliverGrpc(key, body)).output;
    const answers = await Promise.all([
      deliver('evil/dup-1:2:1', { payee: 'EVIL', slow: true }),
      deliver('t1/dup-1:2:1', { payee: 'T1', slow: true }),
      deliver('evil/dup-1:2:1', { payee: 'EVIL', slow: true }),
      deliver('t1/dup-1:2:1', { payee: 'T1', slow: true }),
    ]);
    expect(answers.map((a) => a.payee)).toEqual(['EVIL', 'T1', 'EVIL', 'T1']);
    expect([runs[`${kind}|evil|dup-1:2:1`], runs[`${kind}|t1|dup-1:2:1`]]).toEqual([1, 1]);
  });

  it('a dedupe row from before tenant-qualified keys is never run again and its result is handed to no tenant', async () => {
    const db = workerDbs[kind].db;
    await legacyDedupeRows(db, { key: `legacy-${kind}-1:0:1`, responseBody: { payee: 'LEGACY-SECRET' } }, `legacy-${kind}-2:0:1`);
    for (const executionId of [`legacy-${kind}-1`, `legacy-${kind}-2`]) {
      const record = await runOrder(kind, 't1', executionId, { payee: 'T1', amount: 5 });
      expect(record).toMatchObject({
        status: 'FAILED',
        terminalReason: 'non_retryable',
        // The kit answers the refusal as a problem: its code becomes the step's errorCode.
        lastErrorCode: 'LEGACY_TRANSITION_RECORDED',
      });
      expect(runs[`${kind}|t1|${executionId}:0:1`]).toBeUndefined();
      expect(JSON.stringify(record)).not.toContain('LEGACY-SECRET');
    }
    // The other tenant that may own it gets the same refusal; the row itself is untouched.
    const direct = kind === 'rest' ? await deliverRest(`evil/legacy-${kind}-1:0:1`, {}) : await deliverGrpc(`evil/legacy-${kind}-1:0:1`, {});
    if (kind === 'rest') {
      const res = direct as Response;
      expect(res.status).toBe(409);
      const text = await res.text();
      expect(text).toContain('LEGACY_TRANSITION_RECORDED');
      expect(text).not.toContain('LEGACY-SECRET');
      const lookup = await (await fetch(`${restBase}/transition/${encodeURIComponent(`t1/legacy-${kind}-1:0:1`)}`)).json();
      expect(lookup).toMatchObject({ recorded: true, state: 'DONE', legacy: true });
    } else {
      expect((direct as { code?: number }).code).toBe(grpc.status.FAILED_PRECONDITION);
    }
    expect(runs[`${kind}|evil|legacy-${kind}-1:0:1`]).toBeUndefined();
    const rows = (
      await db.query<{ idempotency_key: string }>("SELECT idempotency_key FROM transition_worker_dedupe WHERE idempotency_key LIKE '%legacy-%' ORDER BY 1")
    ).rows;
    expect(rows.map((r) => r.idempotency_key)).toEqual([`legacy-${kind}-1:0:1`, `legacy-${kind}-2:0:1`]);
  });

  it('refuses an unqualified key', async () => {
    if (kind === 'rest') expect((await deliverRest('plain:0:1', {})).status).toBe(400);
    else expect((await deliverGrpc('plain:0:1', {})).code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe('keys handed to in-process steps', () => {
  it('a LOCAL operator gets ctx.idempotencyKey and a FUNCTION step the same key as invocationId', async () => {
    await engine.start('t1', { pipeline: 'keys', executionId: 'keys-1' });
    const record = await engine.waitFor('t1', 'keys-1', ['SUCCEEDED', 'FAILED']);
    expect(record.segmentInput).toEqual({ local: 't1/keys-1:0:1', localTransition: 'keys-1:0:1', fn: 't1/keys-1:1:1' });
  });
});
