/**
 * The worker kit's promise under real faults: a handler runs at most once per transition
 * identity, and an "in progress" answer never moves the committed attempt.
 * - The caller (an engine worker in its own process) is SIGKILLed while the kit's handler
 *   runs; the redelivery from a new caller is answered "in progress" until the handler
 *   ends, then gets the stored outcome.
 * - The kit's own Postgres (a dedicated cluster, never the shared server) crashes between
 *   the handler's return and its stored outcome; the kit keeps the claim, answers "in
 *   progress" until Postgres is back and the outcome stored, and replays it.
 * Handler runs are counted per identity; the record's attempt and version are checked.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { boundPort, serveHttp } from '../../src/net';
import { definePipeline, restStep } from '../../src/pipeline/define';
import { createPgDb, type Db } from '../../src/store/db';
import { createGrpcTransitionWorker, createRestTransitionWorker, ensureDedupeSchema } from '@pipeline-orchestrator/worker-kit';
import { createLog } from '../../src/log';
import { callGrpc } from '../../src/transports/grpc';
import { IN_PROGRESS_HEADER, TransitionInProgressError } from '../../src/transports/remote';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { startFixture } from '../helpers/fixture-process';
import { until } from '../helpers/until';

let engine: TestEngine;
let cluster: PgCluster;
let kitDb: Db;
let kit: ServerType;
let kitUrl = '';
const callers: ChildProcess[] = [];

/** Handler runs by idempotency key. */
const runs = new Map<string, number>();
/** "in progress" answers the kit gave, by executionId. */
const inProgressAnswers = new Map<string, number>();
const released = new Set<string>();
/** Executions whose handler crashes the kit's Postgres just before returning. */
const crashBeforeReturn = new Set<string>();

const runsOf = (executionId: string) => [...runs].filter(([key]) => key.includes(`/${executionId}:`));

async function startCaller(): Promise<ChildProcess> {
  const caller = await startFixture(
    'test/fixtures/rest-caller-process.ts',
    { TEMPORAL_ADDRESS: inject('temporalAddress'), DATABASE_URL: engine.database.url, TASK_QUEUE: engine.taskQueue, KIT_URL: kitUrl },
    /ready/,
    60_000,
    'the caller process to poll',
  );
  callers.push(caller.child);
  return caller.child;
}

beforeAll(async () => {
  cluster = await startPgCluster();
  kitDb = createPgDb(cluster.url, { max: 4 });
  await ensureDedupeSchema(kitDb);
  const app = createRestTransitionWorker({
    db: kitDb,
    platform: 'kit-under-test',
    duplicateWaitMs: 300,
    leaseMs: 3000,
    async handler(_input, call) {
      runs.set(call.idempotencyKey, (runs.get(call.idempotencyKey) ?? 0) + 1);
      while (!released.has(call.executionId)) await new Promise((resolve) => setTimeout(resolve, 20));
      if (crashBeforeReturn.has(call.executionId)) await cluster.crash();
      return { charged: call.executionId };
    },
  });
  kit = await serveHttp({
    port: 0,
    hostname: '127.0.0.1',
    key: 'test.kit-port',
    fetch: async (request) => {
      const response = await app.fetch(request);
      if (response.headers.get(IN_PROGRESS_HEADER) === 'true') {
        const executionId = request.headers.get('x-execution-id') ?? '?';
        inProgressAnswers.set(executionId, (inProgressAnswers.get(executionId) ?? 0) + 1);
      }
      return response;
    },
  });
  kitUrl = `http://127.0.0.1:${boundPort(kit)}/transition`;
  // The API side plans the run from the same shape; the caller processes (or this one) run it.
  const shape = definePipeline({
    name: 'remote',
    steps: [restStep('call', { url: kitUrl }, { command: true, retry: { limit: 3, waitMs: 100, maxBackoffMs: 500 } })],
  });
  engine = await startTestEngine([shape], { 'pipeline.orchestrator.worker.heartbeat-timeout': '1s' }, { worker: false });
});
afterAll(async () => {
  for (const id of ['kill-1', 'pg-1', 'stall-1']) released.add(id);
  for (const child of callers) if (child.exitCode === null) child.kill('SIGKILL');
  await engine?.stop();
  await new Promise((resolve) => kit?.close(resolve));
  await kitDb?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe('worker kit delivery under faults', () => {
  it('runs the handler once when its caller is killed mid-handler, and the redelivery keeps the same identity', async () => {
    const first = await startCaller();
    await engine.start('acme', { pipeline: 'remote', executionId: 'kill-1' });
    await until(() => runsOf('kill-1').length === 1, 30_000, 'the handler to start');
    first.kill('SIGKILL');
    await once(first, 'exit');

    await startCaller();
    // The new caller gets the step redelivered and hears "in progress", twice at least, before the handler ends.
    await until(() => (inProgressAnswers.get('kill-1') ?? 0) >= 2, 60_000, 'in-progress answers to the redelivery');
    expect(await engine.service.store.get('acme', 'kill-1')).toMatchObject({ status: 'RUNNING', attempt: 1 });
    released.add('kill-1');

    const record = await engine.waitFor('acme', 'kill-1', ['SUCCEEDED', 'FAILED'], 60_000);
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempt: 1, segmentInput: { charged: 'kill-1' } });
    expect(record.version).toBe(3); // created, RUNNING, one step commit: no retry was committed
    expect(runsOf('kill-1')).toEqual([['acme/kill-1:0:1', 1]]);
  });

  it('commits nothing for an attempt Temporal timed out while its caller was stalled: the redelivery keeps the identity, the handler runs once', async () => {
    const running = () => callers.filter((child) => child.exitCode === null && child.signalCode === null);
    if (running().length === 0) await startCaller();
    const alive = running();
    await engine.start('acme', { pipeline: 'remote', executionId: 'stall-1' });
    await until(() => runsOf('stall-1').length === 1, 30_000, 'the handler to start');
    // A loaded machine, made certain: the caller misses its heartbeats until Temporal times its attempt out.
    for (const child of alive) process.kill(child.pid!, 'SIGSTOP');
    try {
      const handle = engine.service.client.workflow.getHandle('pipeline/acme/stall-1');
      const temporalAttempt = async () => (await handle.describe()).raw.pendingActivities?.[0]?.attempt ?? 0;
      await until(async () => (await temporalAttempt()) >= 2, 60_000, 'Temporal to time the stalled attempt out');
    } finally {
      for (const child of alive) process.kill(child.pid!, 'SIGCONT');
    }
    // The timed-out attempt wakes up cancelled and commits nothing; the redelivery asks under the same identity.
    await until(() => (inProgressAnswers.get('stall-1') ?? 0) >= 2, 60_000, 'in-progress answers to the redelivery');
    expect(await engine.service.store.get('acme', 'stall-1')).toMatchObject({ status: 'RUNNING', attempt: 1 });
    released.add('stall-1');

    const record = await engine.waitFor('acme', 'stall-1', ['SUCCEEDED', 'FAILED'], 60_000);
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempt: 1, segmentInput: { charged: 'stall-1' } });
    expect(record.version).toBe(3);
    expect(runsOf('stall-1')).toEqual([['acme/stall-1:0:1', 1]]);
  });

  it("runs the handler once when the kit's Postgres crashes between the handler and its stored outcome", async () => {
    if (callers.every((child) => child.exitCode !== null || child.signalCode !== null)) await startCaller();
    crashBeforeReturn.add('pg-1');
    released.add('pg-1');
    await engine.start('acme', { pipeline: 'remote', executionId: 'pg-1' });
    // The handler ran, the kit's Postgres went down before the outcome was stored: "in progress", not a failure.
    await until(() => (inProgressAnswers.get('pg-1') ?? 0) >= 2, 60_000, 'in-progress answers while the outcome cannot be stored');
    expect(runsOf('pg-1')).toEqual([['acme/pg-1:0:1', 1]]);
    expect(await engine.service.store.get('acme', 'pg-1')).toMatchObject({ status: 'RUNNING', attempt: 1 });
    crashBeforeReturn.delete('pg-1');
    await cluster.start();

    const record = await engine.waitFor('acme', 'pg-1', ['SUCCEEDED', 'FAILED'], 60_000);
    expect(record).toMatchObject({ status: 'SUCCEEDED', attempt: 1, segmentInput: { charged: 'pg-1' } });
    expect(record.version).toBe(3);
    expect(runsOf('pg-1')).toEqual([['acme/pg-1:0:1', 1]]);
    const stored = await kitDb.query<{ state: string }>("SELECT state FROM transition_worker_dedupe WHERE idempotency_key = 'acme/pg-1:0:1'");
    expect(stored.rows).toEqual([{ state: 'DONE' }]);
  });

  it('the gRPC kit answers a copy delivered while the handler runs "in progress", which the transport classes as such', async () => {
    const grpcKit = createGrpcTransitionWorker({
      db: kitDb,
      platform: 'kit-under-test',
      duplicateWaitMs: 300,
      async handler(_input, call) {
        runs.set(call.idempotencyKey, (runs.get(call.idempotencyKey) ?? 0) + 1);
        while (!released.has(call.executionId)) await new Promise((resolve) => setTimeout(resolve, 20));
        return { via: 'grpc' };
      },
    });
    const address = await grpcKit.listen();
    try {
      const ctx = {
        tenantId: 'acme',
        executionId: 'grpc-1',
        correlationId: null,
        attempt: 1,
        transitionKey: 'grpc-1:0:1',
        idempotencyKey: 'acme/grpc-1:0:1',
        signal: new AbortController().signal,
        log: createLog({ level: 'silent' }),
      };
      const first = callGrpc(address, {}, 30_000, ctx);
      await until(() => runsOf('grpc-1').length === 1, 10_000, 'the gRPC handler to start');
      const copy = await callGrpc(address, {}, 30_000, ctx).then(
        () => null,
        (err: unknown) => err,
      );
      expect(copy).toBeInstanceOf(TransitionInProgressError);
      expect(copy).toMatchObject({ code: 'TRANSITION_IN_PROGRESS', retryable: true, platform: 'kit-under-test' });
      released.add('grpc-1');
      expect(await first).toEqual({ via: 'grpc' });
      expect(await callGrpc(address, {}, 30_000, ctx)).toEqual({ via: 'grpc' });
      expect(runsOf('grpc-1')).toEqual([['acme/grpc-1:0:1', 1]]);
    } finally {
      released.add('grpc-1');
      await grpcKit.stop();
    }
  });
});
