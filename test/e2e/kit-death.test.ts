/**
 * A worker that died is not a worker that failed. A worker kit in a process of its own
 * (test/fixtures/kit-process.ts, REST and gRPC on one dedupe table) is SIGKILLed with
 * identities in flight and started again on the same ports:
 * - after it stored an answer it never sent, down ~1 s and ~4 s (REST and gRPC, Command and
 *   not): the service delivers the same identity again through the refused connections, and the
 *   restarted kit replays the stored answer: SUCCEEDED, attempt 1, no retry committed;
 * - after "in progress" answers (another delivery of the identity holds the handler) and while
 *   its outcome store fails: the same identity is asked until the in-progress budget runs out,
 *   then the execution parks REMOTE_OUTCOME_UNKNOWN, never FAILED;
 * - a run terminated while the kit held a stored answer ends FAILED (RUN_TERMINATED): its
 *   re-drive is refused with the kit's evidence (API, dry run, bulk job), unless overridden.
 * Handler runs are counted per effect (executionId + stepIndex, across identities): 1 in every case.
 * Before the fix every refused redelivery was committed as a retry, and the restarted kit ran the
 * handler again under the new identity.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { definePipeline, grpcStep, restStep } from '../../src/pipeline/define';
import { createPgDb, type Db } from '../../src/store/db';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { startFixture } from '../helpers/fixture-process';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { scaled } from '../helpers/time-scale';
import { until } from '../helpers/until';

/** Long enough to outlast a kit's restart on a loaded machine; the parked cases wait it out once, side by side. */
const BUDGET_MS = Math.min(scaled(15_000), 45_000);
/** Enough retries, spaced enough, that the old rule's new identities reach the restarted kit. */
const RETRY = { limit: 5, waitMs: 500, maxBackoffMs: 2000 };

let engine: TestEngine;
let cluster: PgCluster;
let kitDb: Db;
let kit: { child: ChildProcess; output: () => string } | undefined;
let restPort = 0;
let grpcPort = 0;
const children: ChildProcess[] = [];

async function startKit(): Promise<void> {
  const started = await startFixture(
    'test/fixtures/kit-process.ts',
    { KIT_DB_URL: cluster.url, KIT_FAULTS: '1', KIT_GRPC: '1', KIT_PORT: String(restPort), KIT_GRPC_PORT: String(grpcPort), KIT_LEASE_MS: '1000' },
    /ready (\d+) grpc (\d+)/,
    60_000,
    'the kit process to listen',
  );
  children.push(started.child);
  restPort = Number(started.match[1]);
  grpcPort = Number(started.match[2]);
  kit = started;
}

async function killKit(): Promise<void> {
  const child = kit!.child;
  child.kill('SIGKILL');
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
}

/** Handler runs per effect of the execution: stepIndex → runs, across every identity. */
async function effectRuns(executionId: string): Promise<Record<number, number>> {
  const rows = await kitDb.query<{ step_index: number; n: number }>(
    'SELECT step_index, count(*)::int AS n FROM kit_handler_runs WHERE execution_id = $1 GROUP BY step_index',
    [executionId],
  );
  return Object.fromEntries(rows.rows.map((row) => [row.step_index, row.n]));
}

const stored = (executionId: string) =>
  until(() => kit!.output().includes(`stored acme/${executionId}:0:1`), 60_000, `the kit to store ${executionId}'s answer`);
const inProgressAnswers = (executionId: string) =>
  engine.logs.filter((l) => l.event === 'remote_transition_in_progress' && l.executionId === executionId && l.answers !== undefined).length;
const redrivePath = (executionId: string) => `/admin/tenants/acme/executions/${executionId}/redrive`;

beforeAll(async () => {
  cluster = await startPgCluster();
  kitDb = createPgDb(cluster.url, { max: 4 });
  await startKit();
  const rest = { url: `http://127.0.0.1:${restPort}/transition`, dispositionUrl: `http://127.0.0.1:${restPort}/transition/{idempotencyKey}` };
  const grpc = { address: `127.0.0.1:${grpcPort}`, lookup: true };
  engine = await startTestEngine(
    [
      definePipeline({ name: 'rest-command', steps: [restStep('charge', rest, { command: true, retry: RETRY })] }),
      definePipeline({ name: 'rest-plain', steps: [restStep('notify', rest, { retry: RETRY })] }),
      definePipeline({ name: 'grpc-command', steps: [grpcStep('pay', grpc, { command: true, retry: RETRY })] }),
      definePipeline({ name: 'grpc-plain', steps: [grpcStep('archive', grpc, { retry: RETRY })] }),
    ],
    { 'pipeline.orchestrator.worker.in-progress-budget': `${BUDGET_MS}ms` },
  );
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await engine?.stop();
  await kitDb?.close().catch(() => undefined);
  await cluster?.destroy();
});

/** What the service logged of the execution (events, identities, codes): shown beside a failed count. */
const story = (executionId: string) =>
  engine.logs.filter((l) => l.executionId === executionId && l.event).map((l) => [l.event, l.transitionKey, l.errorCode ?? l.decision ?? ''].join(' '));

/** One handler run for the effect and the status expected; else the whole story, to read the failure by. */
async function expectOneRun(executionId: string, status: string, expected: string) {
  const runs = await effectRuns(executionId);
  if (runs[0] !== 1 || status !== expected)
    expect({ executionId, status, runs, story: story(executionId) }).toEqual({ executionId, status: expected, runs: { 0: 1 } });
}

/** A stored answer the kit never sent, the kit down for a while: the same identity is delivered until the restarted kit replays it. */
async function expectReplayed(executionId: string, command: boolean) {
  const record = await engine.waitFor('acme', executionId, ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 120_000);
  await expectOneRun(executionId, record.status, 'SUCCEEDED');
  expect(record).toMatchObject({ status: 'SUCCEEDED', attempt: 1, segmentInput: executionId });
  expect(record.version).toBe(3); // created, RUNNING, the step's commit: no retry was committed
  const effects = await engine.effects.list('acme', executionId);
  expect(effects.map((effect) => [effect.status, effect.transitionKey])).toEqual(command ? [['SUCCEEDED', `${executionId}:0:1`]] : []);
}

/** In-progress answers, then the kit died: parked once the budget ran out, with the kit's evidence, and a NOT_APPLIED re-drive refused. */
async function expectParked(executionId: string, command: boolean) {
  const record = await engine.waitFor('acme', executionId, ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 120_000);
  await expectOneRun(executionId, record.status, 'REMOTE_OUTCOME_UNKNOWN');
  expect(record).toMatchObject({ status: 'REMOTE_OUTCOME_UNKNOWN', attempt: 1, terminalReason: null, lastErrorCode: 'REMOTE_OUTCOME_UNKNOWN' });
  expect(record.remoteCall).toMatchObject({ transitionKey: `${executionId}:0:1`, inProgress: { state: 'IN_PROGRESS', budgetMs: BUDGET_MS } });
  const effects = await engine.effects.list('acme', executionId);
  expect(effects.map((effect) => effect.status)).toEqual(command ? ['AMBIGUOUS'] : []);
  const body = { expectedVersion: record.version, reason: 'the worker says nothing happened', allowFailed: true, confirmedDisposition: 'NOT_APPLIED' };
  const dry = await engine.request('POST', `${redrivePath(executionId)}?dryRun=true`, { body });
  expect(await dry.json()).toMatchObject({ admitted: false, code: 'DISPOSITION_CONTRADICTED', evidence: { workerRecorded: true } });
  const refused = await engine.request('POST', redrivePath(executionId), { body });
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({ code: 'DISPOSITION_CONTRADICTED', evidence: { workerRecorded: true, transitionKey: `${executionId}:0:1` } });
}

describe('a worker kit SIGKILLed with identities in flight, restarted on its ports', () => {
  it(
    'holds across an engine worker SIGKILLed with the kit: the redelivery in a new caller process meets the refused kit and delivers the same identity',
    { timeout: scaled(180_000) },
    async () => {
      // Engine workers in processes of their own (test/fixtures/rest-caller-process.ts, pipeline `remote`: a REST Command step).
      const callers = await startTestEngine(
        [
          definePipeline({
            name: 'remote',
            steps: [
              restStep('call', { url: `http://127.0.0.1:${restPort}/transition` }, { command: true, retry: { limit: 3, waitMs: 100, maxBackoffMs: 500 } }),
            ],
          }),
        ],
        { 'pipeline.orchestrator.worker.heartbeat-timeout': '1s', 'pipeline.orchestrator.worker.in-progress-budget': `${BUDGET_MS}ms` },
        { worker: false },
      );
      const startCaller = async () => {
        const caller = await startFixture(
          'test/fixtures/rest-caller-process.ts',
          {
            TEMPORAL_ADDRESS: inject('temporalAddress'),
            DATABASE_URL: callers.database.url,
            TASK_QUEUE: callers.taskQueue,
            KIT_URL: `http://127.0.0.1:${restPort}/transition`,
            CALLER_LOG_LEVEL: 'info',
          },
          /ready/,
          60_000,
          'the caller process to poll',
        );
        children.push(caller.child);
        return caller;
      };
      try {
        const first = await startCaller();
        await callers.start('acme', { pipeline: 'remote', executionId: 'hold-caller', input: { answer: 'hold-caller' } });
        await stored('hold-caller');
        // The engine worker and the kit die together: nothing but the store remembers that the identity was sent.
        first.child.kill('SIGKILL');
        await killKit();
        const second = await startCaller();
        // Temporal redelivers the step to the new caller; the kit is down: a refusal, taken as an unanswered delivery of the same identity.
        await until(
          async () =>
            /"event":"remote_transition_in_progress"[^\n]*hold-caller:0:1/.test(second.output()) ||
            (await callers.service.store.get('acme', 'hold-caller'))?.status !== 'RUNNING',
          60_000,
          'the new caller to meet the refused kit',
        );
        expect(await callers.service.store.get('acme', 'hold-caller')).toMatchObject({ status: 'RUNNING', attempt: 1 });
        await startKit();
        const record = await callers.waitFor('acme', 'hold-caller', ['SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'], 120_000);
        expect({ status: record.status, attempt: record.attempt, version: record.version, runs: await effectRuns('hold-caller') }).toEqual({
          status: 'SUCCEEDED',
          attempt: 1,
          version: 3,
          runs: { 0: 1 },
        });
      } finally {
        await callers.stop();
      }
    },
  );

  it(
    'delivers the same identity again through refused connections: stored answers are replayed, in-progress ones park; one handler run per effect',
    { timeout: scaled(300_000) },
    async () => {
      // Another delivery of busy-grpc's identity (a caller that died, say) holds its handler: the service hears "in progress".
      const other = fetch(`http://127.0.0.1:${restPort}/transition`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'acme/busy-grpc:0:1' },
        body: '{}',
      }).catch(() => null);
      await until(async () => (await effectRuns('busy-grpc'))[0] === 1, 30_000, "the other delivery to run busy-grpc's handler");
      const starts: [string, string][] = [
        ['hold-rest-command-1s', 'rest-command'],
        ['hold-grpc-plain-1s', 'grpc-plain'],
        ['busy-grpc', 'grpc-command'],
        ['storefail-rest', 'rest-command'],
        ['hold-terminated', 'rest-plain'],
      ];
      for (const [executionId, pipeline] of starts) await engine.start('acme', { pipeline, executionId, input: { answer: executionId } });

      // Down ~1 s: after two answers stored and never sent, two "in progress" identities, and one whose store fails.
      await Promise.all(['hold-rest-command-1s', 'hold-grpc-plain-1s', 'hold-terminated'].map(stored));
      await until(() => inProgressAnswers('busy-grpc') >= 2 && inProgressAnswers('storefail-rest') >= 2, 60_000, '"in progress" answers');
      // A run stopped while its identity is out: the record ends FAILED (RUN_TERMINATED) although the kit has its answer.
      await engine.service.client.workflow.getHandle('pipeline/acme/hold-terminated').terminate('test: the run is stopped while the kit holds its answer');
      await killKit();
      await other;
      await sleep(1000);
      await startKit();
      // The engine's gRPC channel is connected again once hold-grpc-plain-1s's replay came through.
      await expectReplayed('hold-rest-command-1s', true);
      await expectReplayed('hold-grpc-plain-1s', false);

      // Down ~4 s, with other identities in flight.
      for (const [executionId, pipeline] of [
        ['hold-rest-plain-4s', 'rest-plain'],
        ['hold-grpc-command-4s', 'grpc-command'],
      ])
        await engine.start('acme', { pipeline, executionId, input: { answer: executionId } });
      await Promise.all(['hold-rest-plain-4s', 'hold-grpc-command-4s'].map(stored));
      await killKit();
      await sleep(4000);
      await startKit();

      await expectReplayed('hold-rest-plain-4s', false);
      await expectReplayed('hold-grpc-command-4s', true);
      await expectParked('busy-grpc', true);
      await expectParked('storefail-rest', true);
      const bulk = await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
        body: { selection: { executionIds: ['busy-grpc', 'storefail-rest'] }, reason: 'bulk over the parked ones', allowFailed: true },
      });
      expect(bulk.status).toBe(422);
      expect(await bulk.json()).toMatchObject({ code: 'SELECTION_EMPTY', excluded: { REMOTE_OUTCOME_UNKNOWN: 2 } });

      // FAILED although the kit recorded its identity: the re-drive asks the kit first.
      const failed = await engine.waitFor('acme', 'hold-terminated', ['FAILED'], 120_000);
      expect(failed).toMatchObject({ lastErrorCode: 'RUN_TERMINATED', attempt: 1 });
      expect(await effectRuns('hold-terminated')).toEqual({ 0: 1 });
      const body = { expectedVersion: failed.version, reason: 'the run was stopped by mistake', allowFailed: true };
      const evidence = {
        workerRecorded: true,
        workerState: 'DONE',
        transitionKey: 'hold-terminated:0:1',
        identities: [{ transitionKey: 'hold-terminated:0:1', attempt: 1, workerRecorded: true, workerState: 'DONE', firstSentAt: expect.any(String) }],
      };
      const dry = await engine.request('POST', `${redrivePath('hold-terminated')}?dryRun=true`, { body });
      expect(await dry.json()).toMatchObject({ admitted: false, status: 409, code: 'WORKER_RECORDED_FAILED_ATTEMPT', evidence });
      const refused = await engine.request('POST', redrivePath('hold-terminated'), { body });
      expect(refused.status).toBe(409);
      expect(await refused.json()).toMatchObject({ code: 'WORKER_RECORDED_FAILED_ATTEMPT', evidence });
      const job = await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
        body: { selection: { executionIds: ['hold-terminated'] }, reason: 'bulk over the terminated one', allowFailed: true, ratePerSecond: 100 },
      });
      expect(job.status).toBe(202);
      const { jobId } = (await job.json()) as { jobId: string };
      const jobView = async () => (await (await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`)).json()) as Record<string, any>;
      await until(async () => (await jobView()).status === 'COMPLETED', 60_000, 'the bulk job to complete');
      expect((await jobView()).counts).toMatchObject({ admitted: 0, skipped: 1, skippedByCode: { WORKER_RECORDED_FAILED_ATTEMPT: 1 } });
      // The audited override passes the evidence (a dry run: the operator's choice is not the test's).
      const override = await engine.request('POST', `${redrivePath('hold-terminated')}?dryRun=true`, {
        body: { ...body, confirmedDisposition: 'NOT_APPLIED', overrideEvidence: true },
      });
      expect(await override.json()).toMatchObject({ admitted: true, attempt: 2 });
      expect(await engine.service.store.get('acme', 'hold-terminated')).toMatchObject({ status: 'FAILED', version: failed.version });

      expect(engine.logs.filter((l) => l.event === 'execution_step_retry_scheduled')).toEqual([]);
    },
  );
});
