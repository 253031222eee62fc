/**
 * A kit worker whose handler ran, but whose outcome store stays unavailable past the old
 * ~18 s window (retry-limit + 11 Temporal attempts at ~1 s): the service keeps asking the
 * same identity within its in-progress budget (here 20 s) without spending the step's
 * attempts, then parks the execution as REMOTE_OUTCOME_UNKNOWN with the worker's evidence,
 * never FAILED. An operator's NOT_APPLIED re-drive (and its dry run) is refused with that
 * evidence; a bulk job over the execution leaves it out. The handler ran once per identity.
 *
 * Faults, all real, on a Postgres cluster of the kit's own:
 * - row lock plus terminated connections: a transaction of the test holds the identity's
 *   dedupe row FOR UPDATE and every kit statement that waits on it is terminated;
 * - `pg_ctl stop -m immediate` of the kit's cluster right after the handler ran;
 * - a handler still busy with the same identity (another delivery of it) past the budget.
 * Each phase runs its executions side by side, so the file costs about two budgets.
 * REST and gRPC, Command and non-Command steps.
 */
import type { ServerType } from '@hono/node-server';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundPort, serveHttp } from '../../src/net';
import { definePipeline, grpcStep, restStep } from '../../src/pipeline/define';
import { createPgDb, type Db } from '../../src/store/db';
import {
  createGrpcTransitionWorker,
  createRestTransitionWorker,
  ensureDedupeSchema,
  type GrpcTransitionWorker,
  type TransitionCall,
} from '@pipeline-orchestrator/worker-kit';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { until } from '../helpers/until';

const BUDGET = '20s';
/** The old behaviour ended such a step FAILED after retry-limit + 11 one-second attempts: 14 s here. */
const RETRY = { limit: 3, waitMs: 100, maxBackoffMs: 500 };

let engine: TestEngine;
let cluster: PgCluster;
let kitDb: Db;
let rest: ServerType;
let grpcKit: GrpcTransitionWorker;
let restUrl = '';

/** Handler runs by idempotency key. */
const runs = new Map<string, number>();
const runsOf = (executionId: string) => [...runs].filter(([key]) => key.includes(`/${executionId}:`));
/** Handlers held until released, by executionId. */
const held = new Set<string>();
/** Row locks taken by the test, by executionId. */
const locks = new Map<string, pg.Client>();
let terminator: NodeJS.Timeout | undefined;
let crashed: Promise<void> | undefined;

/** Holds the identity's dedupe row FOR UPDATE; every kit statement waiting on it is terminated. */
async function lockRow(key: string, executionId: string): Promise<void> {
  const client = new pg.Client({ connectionString: cluster.url });
  await client.connect();
  client.on('error', () => undefined);
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM transition_worker_dedupe WHERE idempotency_key = $1 FOR UPDATE', [key]);
  locks.set(executionId, client);
  terminator ??= setInterval(() => {
    void kitDb
      .query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database()",
      )
      .catch(() => undefined);
  }, 200);
}

/** Lifts the row-lock fault. */
async function unlockRows(): Promise<void> {
  if (terminator) clearInterval(terminator);
  terminator = undefined;
  for (const client of locks.values()) await client.end().catch(() => undefined);
  locks.clear();
}

async function handler(_input: unknown, call: TransitionCall) {
  runs.set(call.idempotencyKey, (runs.get(call.idempotencyKey) ?? 0) + 1);
  while (held.has(call.executionId)) await new Promise((resolve) => setTimeout(resolve, 20));
  if (call.executionId.startsWith('lock-')) await lockRow(call.idempotencyKey, call.executionId);
  if (call.executionId.startsWith('stop-')) {
    // Both handlers of this phase have run before the kit's Postgres goes down.
    await until(() => runsOf('stop-rest').length + runsOf('stop-grpc').length === 2, 60_000, 'both stop-phase handlers to run');
    crashed ??= cluster.crash();
    await crashed;
  }
  return { done: call.executionId };
}

beforeAll(async () => {
  cluster = await startPgCluster();
  // Room for the statements the faults keep blocked, so a delivery of another identity never waits for a connection.
  kitDb = createPgDb(cluster.url, { max: 20 });
  await ensureDedupeSchema(kitDb);
  const app = createRestTransitionWorker({ db: kitDb, platform: 'kit-store-down', duplicateWaitMs: 300, leaseMs: 3000, handler });
  rest = await serveHttp({ port: 0, hostname: '127.0.0.1', fetch: app.fetch, key: 'test.kit-port' });
  restUrl = `http://127.0.0.1:${boundPort(rest)}/transition`;
  grpcKit = createGrpcTransitionWorker({ db: kitDb, platform: 'kit-store-down', duplicateWaitMs: 300, leaseMs: 3000, handler });
  const grpcAddress = await grpcKit.listen();
  const restTarget = { url: restUrl, dispositionUrl: `${restUrl}/{idempotencyKey}` };
  engine = await startTestEngine(
    [
      definePipeline({ name: 'rest-command', steps: [restStep('charge', restTarget, { command: true, retry: RETRY })] }),
      definePipeline({ name: 'rest-plain', steps: [restStep('notify', restTarget, { retry: RETRY })] }),
      definePipeline({ name: 'grpc-command', steps: [grpcStep('pay', { address: grpcAddress, lookup: true }, { command: true, retry: RETRY })] }),
      definePipeline({ name: 'grpc-plain', steps: [grpcStep('archive', { address: grpcAddress, lookup: true }, { retry: RETRY })] }),
    ],
    { 'pipeline.orchestrator.worker.in-progress-budget': BUDGET },
  );
});

afterAll(async () => {
  held.clear();
  await unlockRows();
  await engine?.stop();
  await new Promise((resolve) => rest?.close(resolve));
  await grpcKit?.stop();
  await kitDb?.close().catch(() => undefined);
  await cluster?.destroy();
});

/** The checks every parked execution of this file must pass. */
async function expectParkedAndGuarded(executionId: string, command: boolean, workerState: string) {
  const record = await engine.waitFor('acme', executionId, ['REMOTE_OUTCOME_UNKNOWN', 'FAILED', 'SUCCEEDED'], 120_000);
  expect(record).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', attempt: 1, terminalReason: null, lastErrorCode: 'REMOTE_OUTCOME_UNKNOWN' });
  expect(record.remoteCall).toMatchObject({ transitionKey: `${executionId}:0:1`, inProgress: { budgetMs: 20_000 } });
  expect(record.remoteCall!.inProgress!.answers).toBeGreaterThanOrEqual(2);
  expect(runsOf(executionId)).toEqual([[`acme/${executionId}:0:1`, 1]]);
  const effects = await engine.effects.list('acme', executionId);
  expect(effects.map((effect) => effect.status)).toEqual(command ? ['AMBIGUOUS'] : []);
  const dlq = await engine.dlq.list('acme', { limit: 50 });
  expect(dlq.entries.filter((entry) => entry.envelope.executionId === executionId)).toEqual([]);

  const body = { expectedVersion: record.version, reason: 'worker says nothing happened', allowFailed: true, confirmedDisposition: 'NOT_APPLIED' };
  const path = `/admin/tenants/acme/executions/${executionId}/redrive`;
  const dry = await engine.request('POST', `${path}?dryRun=true`, { body });
  expect(dry.status).toBe(200);
  expect(await dry.json()).toMatchObject({ admitted: false, code: 'DISPOSITION_CONTRADICTED', evidence: { workerRecorded: true, workerState } });
  const refused = await engine.request('POST', path, { body });
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({
    code: 'DISPOSITION_CONTRADICTED',
    evidence: { workerRecorded: true, workerState, transitionKey: `${executionId}:0:1` },
  });
  const ordinary = await engine.request('POST', path, { body: { expectedVersion: record.version, reason: 'replay', allowFailed: false } });
  expect(ordinary.status).toBe(409);
  expect(await ordinary.json()).toMatchObject({ code: 'ALLOW_FAILED_REQUIRED' });
  expect(await engine.service.store.get('acme', executionId)).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', version: record.version });
}

async function expectBulkJobLeavesOut(executionIds: string[]) {
  const res = await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
    body: { selection: { executionIds }, reason: 'bulk over the parked ones', allowFailed: true },
  });
  expect(res.status).toBe(422);
  expect(await res.json()).toMatchObject({ code: 'SELECTION_EMPTY', excluded: { REMOTE_OUTCOME_UNKNOWN: executionIds.length } });
}

describe('a kit whose outcome store stays unavailable after its handler ran', () => {
  it('row lock plus terminated connections (REST Command, gRPC non-Command) and a handler busy past the budget park REMOTE_OUTCOME_UNKNOWN; each handler ran once', async () => {
    // busy-1: another delivery of the identity (a caller that died) is running the handler when the service asks.
    held.add('busy-1');
    const other = fetch(restUrl, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': 'acme/busy-1:0:1' }, body: '{}' });
    await until(() => runsOf('busy-1').length === 1, 30_000, 'the other delivery to run the handler');
    await engine.start('acme', { pipeline: 'rest-command', executionId: 'busy-1' });
    await engine.start('acme', { pipeline: 'rest-command', executionId: 'lock-rest' });
    await engine.start('acme', { pipeline: 'grpc-plain', executionId: 'lock-grpc' });
    try {
      // The old ~18 s window passes without the step failing. The lookup reads through the lock: the claim's
      // lease could not be renewed under it and ran out (state ABANDONED: recorded, outcome unknown).
      await expectParkedAndGuarded('lock-rest', true, 'ABANDONED');
      await expectParkedAndGuarded('lock-grpc', false, 'ABANDONED');
      // Not STEP_ABANDONED: the handler is still busy with the identity the service asked about.
      await expectParkedAndGuarded('busy-1', true, 'IN_PROGRESS');
      await expectBulkJobLeavesOut(['lock-rest', 'lock-grpc', 'busy-1']);
      expect(engine.logs.filter((l) => l.event === 'remote_transition_outcome_unknown' && l.decision === 'PARKED_IN_PROGRESS_BUDGET_EXHAUSTED')).toHaveLength(
        3,
      );
      expect(engine.logs.filter((l) => l.event === 'execution_failed')).toEqual([]);
    } finally {
      // The store comes back: the kit stores the outcome it kept, and still never runs the handler again.
      await unlockRows();
    }
    await until(
      async () => (await kitDb.query("SELECT 1 FROM transition_worker_dedupe WHERE state = 'DONE' AND idempotency_key LIKE 'acme/lock-%'")).rowCount === 2,
      60_000,
      'the kept outcomes to be stored',
    );
    expect(runsOf('lock-rest')).toEqual([['acme/lock-rest:0:1', 1]]);
    expect(runsOf('lock-grpc')).toEqual([['acme/lock-grpc:0:1', 1]]);
    held.delete('busy-1');
    expect((await other).status).toBe(200);
    expect(runsOf('busy-1')).toEqual([['acme/busy-1:0:1', 1]]);
  });

  it("pg_ctl stop -m immediate of the kit's Postgres: REST non-Command and gRPC Command park, the re-drive is refused with the worker's evidence", async () => {
    await engine.start('acme', { pipeline: 'rest-plain', executionId: 'stop-rest' });
    await engine.start('acme', { pipeline: 'grpc-command', executionId: 'stop-grpc' });
    try {
      // The kit's lookup is down too: the evidence is the in-progress answers the service kept.
      await expectParkedAndGuarded('stop-rest', false, 'IN_PROGRESS');
      await expectParkedAndGuarded('stop-grpc', true, 'IN_PROGRESS');
      await expectBulkJobLeavesOut(['stop-rest', 'stop-grpc']);
    } finally {
      if (crashed) {
        await crashed;
        await cluster.start();
      }
    }
    await until(
      async () => (await kitDb.query("SELECT 1 FROM transition_worker_dedupe WHERE state = 'DONE' AND idempotency_key LIKE 'acme/stop-%'")).rowCount === 2,
      60_000,
      'the kept outcomes to be stored',
    );
    expect(runsOf('stop-rest')).toEqual([['acme/stop-rest:0:1', 1]]);
    expect(runsOf('stop-grpc')).toEqual([['acme/stop-grpc:0:1', 1]]);
  });
});
