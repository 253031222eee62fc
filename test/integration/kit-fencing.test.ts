/**
 * A handler that has started never runs again under the same key (the default, abandoned
 * claims park), and where a kit opts into running abandoned claims again, its lease is fenced.
 * Real faults on a Postgres cluster of the test's own; handler runs counted per identity.
 * - Default: the kit's Postgres is stopped (`pg_ctl stop -m immediate`) longer than the lease
 *   while a handler runs: the handler is not aborted, `worker_kit_lease_expired` is logged, a
 *   redelivery answers "in progress" without running the handler, and the first outcome is
 *   stored once the database is back and replayed.
 * - Default: the handler returns while the kit's Postgres is down (nothing can be written, not
 *   even RAN) and the kit process is SIGKILLed: after the lease ran out a new kit process finds
 *   the claim abandoned, answers "in progress" and logs `worker_kit_claim_abandoned`; the lookup
 *   says ABANDONED; the handler ran once.
 * - `abandonedClaims: 'run-again'`: the same outage aborts the handler's signal and logs
 *   `worker_kit_lease_lost`; a later delivery takes the identity over with a higher fencing
 *   token; the first handler's late outcome changes nothing and is logged as
 *   `worker_kit_outcome_fenced`; every delivery after that replays the second outcome.
 * - A kit process whose outcome cannot be stored (a body Postgres refuses) is SIGKILLed while
 *   it retries the write: the claim was marked RAN first, so a new kit process, after the
 *   lease ran out, answers "in progress" and never runs the handler again.
 */
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../src/log';
import { boundPort, serveHttp } from '../../src/net';
import { IN_PROGRESS_HEADER } from '../../src/transports/remote';
import { createPgDb, type Db } from '../../src/store/db';
import { createRestTransitionWorker, ensureDedupeSchema, LeaseLostError } from '@pipeline-orchestrator/worker-kit';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { startFixture } from '../helpers/fixture-process';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

let cluster: PgCluster;
let kitDb: Db;
let kit: ServerType;
let kitUrl = '';
/** the same kit with `abandonedClaims: 'run-again'` */
let runAgainKit: ServerType;
let runAgainUrl = '';
const logs: Record<string, any>[] = [];
const children: ChildProcess[] = [];

/** Handler runs by idempotency key, each with its signal and a release latch. */
const runs = new Map<string, { signal: AbortSignal; release: () => void }[]>();

const deliver = (url: string, key: string, body: unknown = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body: JSON.stringify(body) });

beforeAll(async () => {
  cluster = await startPgCluster();
  kitDb = createPgDb(cluster.url, { max: 4 });
  await ensureDedupeSchema(kitDb);
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const makeApp = (abandonedClaims: 'park' | 'run-again') =>
    createRestTransitionWorker({
      db: kitDb,
      platform: 'kit-fencing',
      leaseMs: 1500,
      duplicateWaitMs: 200,
      abandonedClaims,
      log: createLog({ level: 'info', destination: sink }),
      async handler(_input, call) {
        const mine = runs.get(call.idempotencyKey) ?? [];
        runs.set(call.idempotencyKey, mine);
        const run = mine.length + 1;
        await new Promise<void>((release) => mine.push({ signal: call.signal, release }));
        return { run };
      },
    });
  kit = await serveHttp({ port: 0, hostname: '127.0.0.1', fetch: makeApp('park').fetch, key: 'test.kit-port' });
  kitUrl = `http://127.0.0.1:${boundPort(kit)}/transition`;
  runAgainKit = await serveHttp({ port: 0, hostname: '127.0.0.1', fetch: makeApp('run-again').fetch, key: 'test.kit-run-again-port' });
  runAgainUrl = `http://127.0.0.1:${boundPort(runAgainKit)}/transition`;
}, scaled(60_000));

afterAll(async () => {
  for (const list of runs.values()) for (const run of list) run.release();
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await new Promise((resolve) => kit?.close(resolve));
  await new Promise((resolve) => runAgainKit?.close(resolve));
  await kitDb?.close().catch(() => undefined);
  await cluster?.destroy();
});

/** A kit process of its own (test/fixtures/kit-process.ts) on the test's cluster; its stdout (the "ready" line and JSON logs) is kept. */
async function startKitProcess(env: Record<string, string> = {}) {
  const kit = await startFixture(
    'test/fixtures/kit-process.ts',
    { KIT_DB_URL: cluster.url, KIT_LEASE_MS: '1000', ...env },
    /ready (\d+)/,
    60_000,
    'the kit process to listen',
  );
  children.push(kit.child);
  const logLines = () =>
    kit
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { child: kit.child, url: `http://127.0.0.1:${kit.match[1]}/transition`, logLines };
}

const leaseRanOut = (key: string) =>
  until(
    async () => (await kitDb.query('SELECT 1 FROM transition_worker_dedupe WHERE idempotency_key = $1 AND lease_until < now()', [key])).rowCount === 1,
    30_000,
    'the dead process’s lease to run out',
  );

describe('worker kit fencing', () => {
  it(
    'by default a database outage longer than the lease neither aborts the handler nor lets another delivery run it; its outcome is stored when the database is back',
    { timeout: scaled(180_000) },
    async () => {
      const key = 'acme/park-1:0:1';
      const first = deliver(kitUrl, key);
      await until(() => runs.get(key)?.length === 1, 30_000, 'the first handler to run');
      const [a] = runs.get(key)!;

      await cluster.crash();
      await until(
        () => logs.some((l) => l.event === 'worker_kit_lease_expired' && l.idempotencyKey === key),
        60_000,
        'the kit to notice that the lease ran out',
      );
      expect(a.signal.aborted).toBe(false);
      await cluster.start();

      // A redelivery while the first handler still runs: answered "in progress", the handler is not run again.
      const second = await deliver(kitUrl, key);
      expect(second.status).toBe(425);
      expect(second.headers.get(IN_PROGRESS_HEADER)).toBe('true');
      expect(runs.get(key)).toHaveLength(1);

      a.release();
      const answered = await first;
      expect(answered.status).toBe(200);
      expect(await answered.json()).toEqual({ run: 1 });
      const replay = await deliver(kitUrl, key);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(await replay.json()).toEqual({ run: 1 });
      expect(runs.get(key)).toHaveLength(1);
      expect(a.signal.aborted).toBe(false);
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_lease_lost')).toEqual([]);
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_lease_expired')).toMatchObject([{ fence: 1, level: 'warn' }]);
    },
  );

  it(
    "with abandonedClaims 'run-again', a database outage longer than the lease aborts the handler's signal, and its late outcome changes nothing",
    { timeout: scaled(180_000) },
    async () => {
      const key = 'acme/fence-1:0:1';
      const kitUrl = runAgainUrl;
      const first = deliver(kitUrl, key);
      await until(() => runs.get(key)?.length === 1, 30_000, 'the first handler to run');
      const [a] = runs.get(key)!;

      await cluster.crash();
      await until(() => a.signal.aborted, 60_000, "the first handler's signal to be aborted once its lease ran out");
      expect(a.signal.reason).toBeInstanceOf(LeaseLostError);
      expect(a.signal.reason).toMatchObject({ cause: 'EXPIRED', fence: 1 });
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_lease_lost')).toMatchObject([
        { fence: 1, cause: 'EXPIRED', level: 'warn' },
      ]);
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_lease_expired')).toEqual([]);
      await cluster.start();
      await until(
        async () => (await kitDb.query('SELECT 1 FROM transition_worker_dedupe WHERE idempotency_key = $1 AND lease_until < now()', [key])).rowCount === 1,
        30_000,
        'the lease to have run out in the store',
      );

      // A second delivery takes the identity over (fence 2) while the first handler still runs.
      const second = deliver(kitUrl, key);
      await until(() => runs.get(key)?.length === 2, 30_000, 'the second delivery to take the claim over');
      const [, b] = runs.get(key)!;
      expect((await kitDb.query<{ fence: number }>('SELECT fence FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([
        { fence: 2 },
      ]);

      // The first handler ignores its signal and returns late: its outcome is fenced out.
      a.release();
      const late = await first;
      expect(late.status).toBe(425);
      expect(late.headers.get(IN_PROGRESS_HEADER)).toBe('true');
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_outcome_fenced')).toMatchObject([{ fence: 1 }]);
      expect((await kitDb.query('SELECT state, fence FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([
        { state: 'IN_PROGRESS', fence: 2 },
      ]);

      b.release();
      const answered = await second;
      expect(answered.status).toBe(200);
      expect(await answered.json()).toEqual({ run: 2 });
      expect(b.signal.aborted).toBe(false);
      const replay = await deliver(kitUrl, key);
      expect(await replay.json()).toEqual({ run: 2 });
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(runs.get(key)).toHaveLength(2);
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_outcome_fenced')).toHaveLength(1);
      expect(logs.filter((l) => l.idempotencyKey === key && l.event === 'worker_kit_lease_lost')).toHaveLength(1);
    },
  );

  it(
    'a kit process killed while its outcome cannot be stored leaves the claim RAN: the next process answers "in progress", never runs again',
    { timeout: scaled(180_000) },
    async () => {
      const key = 'acme/ran-1:0:1';
      const handlerRuns = async () =>
        Number((await kitDb.query<{ n: number }>('SELECT count(*)::int AS n FROM kit_handler_runs WHERE idempotency_key = $1', [key])).rows[0].n);

      const one = await startKitProcess();
      // Postgres refuses this outcome (jsonb has no \u0000): the handler ran, its outcome cannot be stored.
      const first = await deliver(one.url, key, { answer: 'nul \u0000 byte' });
      expect(first.status).toBe(425);
      expect(await handlerRuns()).toBe(1);
      expect((await kitDb.query('SELECT state FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([{ state: 'RAN' }]);
      one.child.kill('SIGKILL');
      await once(one.child, 'exit');

      const two = await startKitProcess();
      await leaseRanOut(key);
      const again = await deliver(two.url, key, { answer: 'nul \u0000 byte' });
      expect(again.status).toBe(425);
      expect(again.headers.get(IN_PROGRESS_HEADER)).toBe('true');
      expect(await handlerRuns()).toBe(1);
      const lookup = await fetch(`${two.url}/${encodeURIComponent(key)}`);
      expect(await lookup.json()).toMatchObject({ recorded: true, state: 'RAN' });
      two.child.kill('SIGKILL');
    },
  );

  it(
    'a kit process killed after its handler returned while its Postgres was down (not even RAN written) never runs the handler again: the claim is abandoned',
    { timeout: scaled(180_000) },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'kit-abandoned-'));
      const runsFile = join(dir, 'runs');
      const goFile = join(dir, 'go');
      const key = 'acme/abandoned-1:0:1';
      const handlerRuns = () =>
        existsSync(runsFile)
          ? readFileSync(runsFile, 'utf8')
              .split('\n')
              .filter((line) => line.startsWith(`${key} `)).length
          : 0;

      const one = await startKitProcess({ KIT_RUNS_FILE: runsFile, KIT_GO_FILE: goFile });
      const first = deliver(one.url, key, { answer: 'made its effect' });
      await until(() => handlerRuns() === 1, 30_000, 'the handler to start');
      await cluster.crash();
      // The handler returns now: RAN and its outcome cannot be written, so the kit answers "in progress".
      writeFileSync(goFile, '');
      const answered = await first;
      expect(answered.status).toBe(425);
      expect(answered.headers.get(IN_PROGRESS_HEADER)).toBe('true');
      one.child.kill('SIGKILL');
      await once(one.child, 'exit');

      await cluster.start();
      expect((await kitDb.query('SELECT state, fence FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([
        { state: 'IN_PROGRESS', fence: 1 },
      ]);
      await leaseRanOut(key);
      const two = await startKitProcess({ KIT_RUNS_FILE: runsFile });
      for (let delivery = 0; delivery < 3; delivery++) {
        const again = await deliver(two.url, key, { answer: 'made its effect' });
        expect(again.status).toBe(425);
        expect(again.headers.get(IN_PROGRESS_HEADER)).toBe('true');
      }
      expect(handlerRuns()).toBe(1);
      // The kit logs from its own process: its last line can reach this test's pipe after the answer did.
      const abandoned = () => two.logLines().filter((l) => l.event === 'worker_kit_claim_abandoned');
      await until(() => abandoned().length >= 3, 30_000, 'three worker_kit_claim_abandoned lines');
      expect(abandoned()).toMatchObject([{ idempotencyKey: key, level: 'warn' }, { idempotencyKey: key }, { idempotencyKey: key }]);
      // The claim was not taken over (the fence did not move), and operators see it as abandoned: recorded, outcome unknown.
      expect((await kitDb.query('SELECT state, fence FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([
        { state: 'IN_PROGRESS', fence: 1 },
      ]);
      const lookup = await fetch(`${two.url}/${encodeURIComponent(key)}`);
      expect(await lookup.json()).toMatchObject({ recorded: true, state: 'ABANDONED' });
      two.child.kill('SIGKILL');
    },
  );
});
