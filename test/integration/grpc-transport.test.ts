/**
 * gRPC transition workers over a real gRPC server on loopback (the kit), with the real
 * engine, dev server and Postgres: success, retryable failure then success, and the
 * deadline parking the execution as REMOTE_OUTCOME_UNKNOWN.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, grpcStep } from '../../src/pipeline/define';
import { grpcClient } from '../../src/transports/grpc';
import { createGrpcTransitionWorker, ensureDedupeSchema, type GrpcTransitionWorker } from '@pipeline-orchestrator/worker-kit';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';
import { scaled } from '../helpers/time-scale';

/** The step's deadline: 2 s on a quiet machine, stretched with the load as every wait of the suite is. */
const DEADLINE_MS = scaled(2000);

let engine: TestEngine;
let workerDb: TestDatabase;
let worker: GrpcTransitionWorker;
let address = '';
const handled: Record<string, number> = {};
const SENTINEL = 'SENTINEL-GRPC-SECRET';

beforeAll(async () => {
  workerDb = await createTestDatabase();
  await ensureDedupeSchema(workerDb.db);
  worker = createGrpcTransitionWorker({
    db: workerDb.db,
    platform: 'kit-grpc-test/1.0',
    async handler(input, call) {
      handled[call.transitionKey] = (handled[call.transitionKey] ?? 0) + 1;
      const body = input as { mode?: string; failTimes?: number; value?: unknown };
      if (body.mode === 'flaky' && call.attempt <= (body.failTimes ?? 1)) throw new Error('downstream busy');
      if (body.mode === 'hang' && call.attempt === 1) await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS + 1000));
      if (body.mode === 'slow') await new Promise((resolve) => setTimeout(resolve, 300));
      return { via: 'grpc', attempt: call.attempt, tenant: call.tenantId, value: body.value ?? null };
    },
  });
  address = await worker.listen();
  engine = await startTestEngine([
    definePipeline({
      name: 'grpc',
      retry: { limit: 3, waitMs: 50, maxBackoffMs: 100 },
      steps: [grpcStep('call', { address, lookup: true }, { command: true, timeoutMs: DEADLINE_MS })],
    }),
  ]);
});
afterAll(async () => {
  await engine?.stop();
  await worker?.stop();
  await workerDb?.drop();
});

describe('gRPC transport', () => {
  it('succeeds, with the transition identity and ids in metadata', async () => {
    await engine.start('acme', { pipeline: 'grpc', executionId: 'grpc-ok', input: { value: 3 } });
    const record = await engine.waitFor('acme', 'grpc-ok', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN']);
    expect(record.status).toBe('SUCCEEDED');
    expect(record.segmentInput).toEqual({ via: 'grpc', attempt: 1, tenant: 'acme', value: 3 });
    expect(handled['grpc-ok:0:1']).toBe(1);
  });

  it('retries UNAVAILABLE and then succeeds', async () => {
    await engine.start('acme', { pipeline: 'grpc', executionId: 'grpc-flaky', input: { mode: 'flaky', failTimes: 2 } });
    const record = await engine.waitFor('acme', 'grpc-flaky', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 20_000);
    expect(record.status).toBe('SUCCEEDED');
    expect(record.attempt).toBe(3);
    expect([handled['grpc-flaky:0:1'], handled['grpc-flaky:0:2'], handled['grpc-flaky:0:3']]).toEqual([1, 1, 1]);
    const retries = engine.logs.filter((l) => l.event === 'execution_step_retry_scheduled' && l.executionId === 'grpc-flaky');
    expect(retries.map((l) => l.errorCode)).toEqual(['GRPC_UNAVAILABLE', 'GRPC_UNAVAILABLE']);
  });

  it(
    'parks DEADLINE_EXCEEDED as REMOTE_OUTCOME_UNKNOWN, with one warning, one outcome-unknown event and no retry',
    { timeout: scaled(15 * DEADLINE_MS) },
    async () => {
      await engine.start('acme', { pipeline: 'grpc', executionId: 'grpc-hang', input: { mode: 'hang', secret: SENTINEL } });
      const record = await engine.waitFor('acme', 'grpc-hang', ['REMOTE_OUTCOME_UNKNOWN', 'FAILED', 'SUCCEEDED'], 10 * DEADLINE_MS);
      expect(record.status).toBe('REMOTE_OUTCOME_UNKNOWN');
      expect((await engine.effects.get('acme', 'grpc-hang', 0))?.status).toBe('AMBIGUOUS');
      const events = engine.logs.filter((l) => l.executionId === 'grpc-hang' && String(l.event).startsWith('remote_transition_'));
      expect(events.map((l) => l.event)).toEqual(['remote_transition_deadline_warning', 'remote_transition_outcome_unknown']);
      expect(events[1]).toMatchObject({ protocol: 'GRPC', transitionKey: 'grpc-hang:0:1', deadlineMs: DEADLINE_MS });
      expect(JSON.stringify(engine.logs)).not.toContain(SENTINEL);
      // No retry: once the run has closed no attempt can follow, so count the calls then.
      expect(await engine.runsOf('acme', 'grpc-hang', 1)).toEqual([expect.objectContaining({ status: 'FAILED' })]);
      expect(handled['grpc-hang:0:1']).toBe(1);
      expect(handled['grpc-hang:0:2']).toBeUndefined();
      const view = await (await engine.request('GET', '/admin/tenants/acme/executions/grpc-hang')).json();
      expect(view.disposition).toMatchObject({ lookup: 'ANSWERED', workerRecorded: true, protocol: 'GRPC' });

      const body = { expectedVersion: record.version, reason: 'worker checked', allowFailed: true, confirmedDisposition: 'NOT_APPLIED' };
      const contradicted = await engine.request('POST', '/admin/tenants/acme/executions/grpc-hang/redrive', { body });
      expect(contradicted.status).toBe(409);
      expect(await contradicted.json()).toMatchObject({
        code: 'DISPOSITION_CONTRADICTED',
        evidence: { lookup: 'ANSWERED', workerRecorded: true, protocol: 'GRPC' },
      });
      const res = await engine.request('POST', '/admin/tenants/acme/executions/grpc-hang/redrive', { body: { ...body, overrideEvidence: true } });
      expect(res.status).toBe(202);
      expect((await engine.waitFor('acme', 'grpc-hang', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 20_000)).status).toBe('SUCCEEDED');
      expect(handled['grpc-hang:0:2']).toBe(1);
    },
  );

  it('the gRPC kit runs the handler once for concurrent deliveries of one identity', async () => {
    const client = grpcClient(address);
    const invoke = () =>
      new Promise<any>((resolve, reject) => {
        const md = new grpc.Metadata();
        md.set('idempotency-key', 'acme/grpc-kit:0:1');
        client.Invoke({ input_json: JSON.stringify({ mode: 'slow', value: 9 }) }, md, (err: Error | null, res: unknown) => (err ? reject(err) : resolve(res)));
      });
    const [a, b] = await Promise.all([invoke(), invoke()]);
    // One is the original answer, the other the stored one (jsonb may reorder keys).
    expect(JSON.parse(a.output_json)).toEqual(JSON.parse(b.output_json));
    expect(JSON.parse(a.output_json)).toMatchObject({ via: 'grpc', value: 9 });
    expect(handled['grpc-kit:0:1']).toBe(1);
  });
});
