/**
 * What a kit handler learns about its call (TransitionCall), from the headers and metadata
 * the service sends: the step's name, the pipeline, the caller's deadline and the
 * traceparent, besides the ids. Real REST and gRPC kit servers on loopback with their dedupe
 * in Postgres, called by the service's own transports (callRest / callGrpc), and by raw
 * calls for what the service sends only with tracing on or what a foreign caller may send.
 */
import { serve, type ServerType } from '@hono/node-server';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../src/log';
import { callGrpc, grpcClient } from '../../src/transports/grpc';
import { transitionHeaders, type RemoteCallContext } from '../../src/transports/remote';
import { callRest } from '../../src/transports/rest';
import {
  createGrpcTransitionWorker,
  createRestTransitionWorker,
  ensureDedupeSchema,
  type GrpcTransitionWorker,
  type TransitionCall,
} from '@pipeline-orchestrator/worker-kit';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

type Seen = Omit<TransitionCall, 'signal'> & { receivedAt: number };
let database: TestDatabase;
let server: ServerType;
let restUrl = '';
let grpcWorker: GrpcTransitionWorker;
let grpcAddress = '';
/** What each handler run saw, by kit and idempotency key (one entry per run). */
const seen: Record<string, Seen[]> = {};

const handlerFor = (kit: 'rest' | 'grpc') => async (_input: unknown, call: TransitionCall) => {
  const { signal, ...rest } = call;
  expect(signal.aborted).toBe(false);
  (seen[`${kit} ${call.idempotencyKey}`] ??= []).push({ ...rest, receivedAt: Date.now() });
  return { ok: true };
};

beforeAll(async () => {
  database = await createTestDatabase();
  await ensureDedupeSchema(database.db);
  const rest = createRestTransitionWorker({ db: database.db, platform: 'call-rest/1', handler: handlerFor('rest') });
  server = serve({ fetch: rest.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  restUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/transition`;
  grpcWorker = createGrpcTransitionWorker({ db: database.db, platform: 'call-grpc/1', handler: handlerFor('grpc') });
  grpcAddress = await grpcWorker.listen();
});

afterAll(async () => {
  await grpcWorker?.stop();
  await new Promise((resolve) => server?.close(resolve));
  await database?.drop();
});

function context(executionId: string): RemoteCallContext {
  return {
    tenantId: 'acme',
    executionId,
    correlationId: 'corr-7',
    attempt: 2,
    transitionKey: `${executionId}:3:2`,
    idempotencyKey: `acme/${executionId}:3:2`,
    stepName: 'render',
    pipeline: 'invoices',
    signal: new AbortController().signal,
    log: createLog({ level: 'silent' }),
  };
}

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('TransitionCall', () => {
  it.each(['rest', 'grpc'] as const)('carries the step, the pipeline and the caller’s deadline the service sends (%s)', async (kit) => {
    const ctx = context(`deadline-${kit}`);
    const sentAt = Date.now();
    const output = kit === 'rest' ? await callRest(restUrl, { a: 1 }, 4000, ctx) : await callGrpc(grpcAddress, { a: 1 }, 4000, ctx);
    expect(output).toEqual({ ok: true });
    const runs = seen[`${kit} acme/deadline-${kit}:3:2`];
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      idempotencyKey: `acme/deadline-${kit}:3:2`,
      transitionKey: `deadline-${kit}:3:2`,
      tenantId: 'acme',
      executionId: `deadline-${kit}`,
      correlationId: 'corr-7',
      attempt: 2,
      stepName: 'render',
      pipeline: 'invoices',
      deadlineMs: 4000,
      traceparent: null, // tracing is off in this process: the service sends none
    });
    // deadlineAt is the kit's clock at receipt plus the deadline: after this test sent it, before the handler ran + 4 s.
    expect(runs[0].deadlineAt).toBeGreaterThanOrEqual(sentAt + 4000);
    expect(runs[0].deadlineAt).toBeLessThanOrEqual(runs[0].receivedAt + 4000);
  });

  it.each(['rest', 'grpc'] as const)(
    'passes a well-formed traceparent on, and leaves out a malformed one and a deadline that is not a number (%s)',
    async (kit) => {
      const good = { ...transitionHeaders(context(`trace-${kit}`), 2500), traceparent: TRACEPARENT };
      const bad: Record<string, string> = {
        ...transitionHeaders({ ...context(`bad-${kit}`), stepName: undefined, pipeline: undefined }, 0),
        'x-transition-deadline-ms': 'soon',
        traceparent: '00-zz-1-01',
      };
      for (const headers of [good, bad]) {
        if (kit === 'rest') {
          const response = await fetch(restUrl, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' });
          expect(response.status).toBe(200);
        } else {
          const metadata = new grpc.Metadata();
          for (const [name, value] of Object.entries(headers)) metadata.set(name, value);
          await new Promise((resolve, reject) =>
            grpcClient(grpcAddress).Invoke({ input_json: '{}' }, metadata, { deadline: Date.now() + 10_000 }, (err: Error | null) =>
              err ? reject(err) : resolve(null),
            ),
          );
        }
      }
      expect(seen[`${kit} acme/trace-${kit}:3:2`]).toMatchObject([{ traceparent: TRACEPARENT, deadlineMs: 2500, stepName: 'render', pipeline: 'invoices' }]);
      expect(seen[`${kit} acme/bad-${kit}:3:2`]).toMatchObject([{ traceparent: null, deadlineMs: null, deadlineAt: null, stepName: null, pipeline: null }]);
    },
  );
});
