/**
 * The worker kit's lease is fenced, and "the handler has run" survives the kit's process.
 * Real faults on a Postgres cluster of the test's own; handler runs counted per identity.
 * - The kit's Postgres is stopped (`pg_ctl stop -m immediate`) longer than the lease while a
 *   handler runs: the handler's signal is aborted and `worker_kit_lease_lost` logged; a later
 *   delivery takes the identity over with a higher fencing token; the first handler's late
 *   outcome changes nothing and is logged as `worker_kit_outcome_fenced`; every delivery
 *   after that replays the second outcome.
 * - A kit process whose outcome cannot be stored (a body Postgres refuses) is SIGKILLed while
 *   it retries the write: the claim was marked RAN first, so a new kit process, after the
 *   lease ran out, answers "in progress" and never runs the handler again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import type { ServerType } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLog } from '../../src/log';
import { boundPort, serveHttp } from '../../src/net';
import { IN_PROGRESS_HEADER } from '../../src/transports/remote';
import { createPgDb, type Db } from '../../src/store/db';
import { ensureDedupeSchema } from '../../src/worker-kit/dedupe-store';
import { createRestTransitionWorker, LeaseLostError } from '../../src/worker-kit/rest-worker';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { until } from '../helpers/until';

let cluster: PgCluster;
let kitDb: Db;
let kit: ServerType;
let kitUrl = '';
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
  const app = createRestTransitionWorker({
    db: kitDb,
    platform: 'kit-fencing',
    leaseMs: 1500,
    duplicateWaitMs: 200,
    log: createLog({ level: 'info', destination: sink }),
    async handler(_input, call) {
      const mine = runs.get(call.idempotencyKey) ?? [];
      runs.set(call.idempotencyKey, mine);
      const run = mine.length + 1;
      await new Promise<void>((release) => mine.push({ signal: call.signal, release }));
      return { run };
    },
  });
  kit = await serveHttp({ port: 0, hostname: '127.0.0.1', fetch: app.fetch, key: 'test.kit-port' });
  kitUrl = `http://127.0.0.1:${boundPort(kit)}/transition`;
}, 60_000);

afterAll(async () => {
  for (const list of runs.values()) for (const run of list) run.release();
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await new Promise((resolve) => kit?.close(resolve));
  await kitDb?.close().catch(() => undefined);
  await cluster?.destroy();
});

describe('worker kit fencing', () => {
  it("a database outage longer than the lease aborts the handler's signal, and its late outcome changes nothing", async () => {
    const key = 'acme/fence-1:0:1';
    const first = deliver(kitUrl, key);
    await until(() => runs.get(key)?.length === 1, 30_000, 'the first handler to run');
    const [a] = runs.get(key)!;

    await cluster.crash();
    await until(() => a.signal.aborted, 60_000, "the first handler's signal to be aborted once its lease ran out");
    expect(a.signal.reason).toBeInstanceOf(LeaseLostError);
    expect(a.signal.reason).toMatchObject({ cause: 'EXPIRED', fence: 1 });
    expect(logs.filter((l) => l.event === 'worker_kit_lease_lost')).toMatchObject([{ idempotencyKey: key, fence: 1, cause: 'EXPIRED', level: 'warn' }]);
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
    expect((await kitDb.query<{ fence: number }>('SELECT fence FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([{ fence: 2 }]);

    // The first handler ignores its signal and returns late: its outcome is fenced out.
    a.release();
    const late = await first;
    expect(late.status).toBe(425);
    expect(late.headers.get(IN_PROGRESS_HEADER)).toBe('true');
    expect(logs.filter((l) => l.event === 'worker_kit_outcome_fenced')).toMatchObject([{ idempotencyKey: key, fence: 1 }]);
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
    expect(logs.filter((l) => l.event === 'worker_kit_outcome_fenced')).toHaveLength(1);
  }, 180_000);

  it('a kit process killed while its outcome cannot be stored leaves the claim RAN: the next process answers "in progress", never runs again', async () => {
    const start = async () => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/kit-process.ts'], {
        env: { ...process.env, KIT_DB_URL: cluster.url, KIT_LEASE_MS: '1000' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      let out = '';
      child.stdout!.on('data', (chunk) => (out += chunk));
      await until(
        () => {
          if (child.exitCode !== null) throw new Error(`kit process exited with ${child.exitCode}`);
          return /ready \d+/.test(out);
        },
        60_000,
        'the kit process to listen',
      );
      return { child, url: `http://127.0.0.1:${/ready (\d+)/.exec(out)![1]}/transition` };
    };
    const key = 'acme/ran-1:0:1';
    const handlerRuns = async () =>
      Number((await kitDb.query<{ n: number }>('SELECT count(*)::int AS n FROM kit_handler_runs WHERE idempotency_key = $1', [key])).rows[0].n);

    const one = await start();
    // Postgres refuses this outcome (jsonb has no \u0000): the handler ran, its outcome cannot be stored.
    const first = await deliver(one.url, key, { answer: 'nul \u0000 byte' });
    expect(first.status).toBe(425);
    expect(await handlerRuns()).toBe(1);
    expect((await kitDb.query('SELECT state FROM transition_worker_dedupe WHERE idempotency_key = $1', [key])).rows).toEqual([{ state: 'RAN' }]);
    one.child.kill('SIGKILL');
    await once(one.child, 'exit');

    const two = await start();
    await until(
      async () => (await kitDb.query('SELECT 1 FROM transition_worker_dedupe WHERE idempotency_key = $1 AND lease_until < now()', [key])).rowCount === 1,
      30_000,
      'the dead process’s lease to run out',
    );
    const again = await deliver(two.url, key, { answer: 'nul \u0000 byte' });
    expect(again.status).toBe(425);
    expect(again.headers.get(IN_PROGRESS_HEADER)).toBe('true');
    expect(await handlerRuns()).toBe(1);
    const lookup = await fetch(`${two.url}/${encodeURIComponent(key)}`);
    expect(await lookup.json()).toMatchObject({ recorded: true, state: 'RAN' });
    two.child.kill('SIGKILL');
  }, 180_000);
});
