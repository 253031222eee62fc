/**
 * The whole service for the fleet benchmarks (`jobrate`, `fleet`, `retention`): API, worker,
 * dispatcher, the bulk jobs' worker on their own task queue and their own pool, started with
 * `startService` on a dev server and a database of its own, its API served over real HTTP on a
 * free loopback port. Two pipelines: `once-failing` (its one step fails its first attempt
 * non-retryably and succeeds on a re-drive's, after `holdMs`) and `ordinary` (one no-op step:
 * the live traffic whose submission latency the figures read).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { sha256Hex } from '../src/api/middleware/bearer-auth';
import { loadConfig } from '../src/config/config';
import type { Log } from '../src/log';
import { definePipeline, localStep } from '../src/pipeline/define';
import { startService, type Service } from '../src/runtime';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { startFixture } from '../test/helpers/fixture-process';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres';
import { percentile, pool } from './stats';
import { waitFor, type WaitOptions } from './wait';

export const TOKEN = 'bench-admin-token';

export interface BenchServiceOptions {
  log: Log;
  /** a running Temporal to use (tests); otherwise a fresh dev server of its own */
  temporalAddress?: string;
  /** a database to use (already seeded); otherwise a fresh one, dropped at stop */
  database?: TestDatabase;
  /** how long a re-driven `once-failing` run's step takes; default 0 */
  holdMs?: number;
  /** more configuration keys (retention, pools) */
  settings?: Record<string, unknown>;
  /**
   * 'one' (default): the whole service in this process. 'split': this process is the API
   * (`pipeline.role` api) and a process of its own is the worker (`pipeline.role` worker:
   * the pipelines' runs, the jobs' ticks), as a fleet deployment runs them.
   */
  roles?: 'one' | 'split';
  /**
   * 'shared' (default): a job's re-driven runs start on the pipelines' task queue and run beside
   * everything else. 'held': on a task queue of their own (`pipeline.redrive-job.run-task-queue`)
   * that no process of the bench runs (`pipeline.orchestrator.worker.runs` live) until
   * `runBulk()` starts a worker process that runs them: a job's admissions measured alone.
   */
  jobRuns?: 'shared' | 'held';
}

export interface BenchService {
  service: Service;
  /** `http://127.0.0.1:<port>/pipeline` */
  base: string;
  /** one API call over HTTP; anything but 2xx throws */
  request(method: string, path: string, body?: unknown): Promise<any>;
  /** one ordinary submission over HTTP, its round trip in ms (throws unless 202) */
  submit(executionId: string): Promise<number>;
  /**
   * The tenant this service's executions are made under: its own (`bench-<random>`), so two bench
   * services on one Temporal (the smoke tests, one after another on the suite's dev server) never
   * share a workflow id (`pipeline/<tenant>/<executionId>`). With a shared tenant, a run the
   * previous service left open in Temporal (its record ended, its workflow's last task not yet
   * run when that service stopped) held the next one's id: its start waited forever.
   */
  tenant: string;
  /** the dev server's pid (absent with a Temporal of the caller's) and the database's name: whose CPU to count */
  temporalPid?: number;
  databaseName: string;
  /**
   * with `jobRuns` 'held': starts a worker process that runs bulk jobs' runs only (under
   * `nice -n nice` when given); resolves once it serves, to its stop
   */
  runBulk(nice?: number): Promise<() => Promise<void>>;
  stop(): Promise<void>;
}

/** The benchmark's two pipelines: `once-failing` (fails its first attempt, so a re-drive succeeds; holds `holdMs`) and `ordinary`. */
export function benchPipelines(holdMs = 0) {
  const onceFailing = definePipeline({
    name: 'once-failing',
    steps: [
      localStep(
        'call',
        async (input: unknown, ctx) => {
          if (ctx.attempt === 1) throw Object.assign(new Error('dependency down'), { code: 'DEPENDENCY_DOWN' });
          if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
          return input;
        },
        { retry: { limit: 0 } },
      ),
    ],
  });
  const ordinary = definePipeline({ name: 'ordinary', steps: [localStep('noop', (input: unknown) => input)] });
  return [onceFailing, ordinary];
}

export async function startBenchService(options: BenchServiceOptions): Promise<BenchService> {
  const holdMs = options.holdMs ?? 0;
  const devServer: DevServer | undefined = options.temporalAddress ? undefined : await startDevServer();
  const database = options.database ?? (await createTestDatabase());
  let service: Service;
  let worker: ChildProcess | undefined;
  const settings: Record<string, unknown> = {
    'pipeline.store.url': database.url,
    'pipeline.temporal.address': options.temporalAddress ?? devServer!.address,
    'pipeline.temporal.task-queue': `fleet-bench-${randomBytes(4).toString('hex')}`,
    'pipeline.auth.tokens': [{ sha256: sha256Hex(TOKEN), role: 'admin', name: 'bench' }],
    'pipeline.temporal.call-timeout': '30s',
    'pipeline.server.port': 0,
    'pipeline.server.host': '127.0.0.1',
    ...options.settings,
  };
  if (options.jobRuns === 'held') {
    settings['pipeline.redrive-job.run-task-queue'] = `${settings['pipeline.temporal.task-queue']}-bulk`;
    settings['pipeline.orchestrator.worker.runs'] = 'live';
  }
  try {
    if (options.roles === 'split') worker = await startRoleWorker({ ...settings, 'pipeline.role': 'worker' }, holdMs);
    const config = loadConfig({}, options.roles === 'split' ? { ...settings, 'pipeline.role': 'api' } : settings);
    service = await startService({ config, log: options.log, pipelines: benchPipelines(holdMs) });
  } catch (err) {
    await stopRoleWorker(worker);
    if (!options.database) await database.drop().catch(() => undefined);
    await devServer?.stop().catch(() => undefined);
    throw err;
  }
  const tenant = `bench-${randomBytes(4).toString('hex')}`;
  const base = `http://127.0.0.1:${service.ports.http}/pipeline`;
  const call = async (method: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await call(method, path, body);
    const json = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json).slice(0, 300)}`);
    return json;
  };
  const submit = async (executionId: string) => {
    const t0 = performance.now();
    const res = await call('POST', `/api/tenants/${tenant}/executions`, { pipeline: 'ordinary', executionId, input: { n: 1 } });
    await res.arrayBuffer();
    const ms = performance.now() - t0;
    if (res.status !== 202) throw new Error(`an ordinary submission answered ${res.status}`);
    return ms;
  };
  return {
    service,
    base,
    request,
    submit,
    tenant,
    temporalPid: devServer?.pid,
    databaseName: new URL(database.url).pathname.slice(1),
    async runBulk(nice) {
      if (options.jobRuns !== 'held') throw new Error("runBulk() needs startBenchService({ jobRuns: 'held' })");
      const bulk = await startRoleWorker({ ...settings, 'pipeline.role': 'worker', 'pipeline.orchestrator.worker.runs': 'bulk' }, holdMs, nice);
      return () => stopRoleWorker(bulk);
    },
    async stop() {
      await service.stop();
      await stopRoleWorker(worker);
      if (!options.database) await database.drop();
      await devServer?.stop();
    },
  };
}

/** Fails `ids` of `once-failing` for real (through the engine) and waits until every one is FAILED. */
export async function failExecutions(bench: BenchService, ids: string[], options: WaitOptions = {}): Promise<void> {
  await pool(ids.length, 16, async (i) => {
    await bench.request('POST', `/api/tenants/${bench.tenant}/executions`, { pipeline: 'once-failing', executionId: ids[i], input: { i } });
  });
  const failed = async () =>
    (
      await bench.service.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM execution_record WHERE tenant_id = $1 AND execution_id = ANY($2) AND status = 'FAILED'`,
        [bench.tenant, ids],
      )
    ).rows[0].n;
  await waitFor(
    `${ids.length} executions to fail`,
    failed,
    (n) => n === ids.length,
    (n) => `${n} FAILED so far`,
    { everyMs: 500, ...options },
  );
}

/** Creates a bulk job re-driving `ids` at `ratePerSecond` (with room for `batchSize` runs in flight); its view. */
export function createJob(bench: BenchService, ids: string[], ratePerSecond: number, batchSize: number): Promise<any> {
  return bench.request('POST', `/admin/tenants/${bench.tenant}/redrive-jobs`, {
    selection: { executionIds: ids },
    reason: 'benchmark',
    allowFailed: true,
    ratePerSecond,
    batchSize,
  });
}

/** Reads a bulk job's view (its status and counts). */
export const jobView = (bench: BenchService, jobId: string): Promise<any> => bench.request('GET', `/admin/tenants/${bench.tenant}/redrive-jobs/${jobId}`);

/** A job's view, once `done` says so or the job has ended (no longer RUNNING); progress and cap as `waitFor`. */
export async function waitForJob(bench: BenchService, jobId: string, done: (view: any) => boolean, options: WaitOptions = {}): Promise<any> {
  return waitFor(
    `job ${jobId}`,
    () => jobView(bench, jobId),
    (view) => done(view) || view.status !== 'RUNNING',
    (view) => `${view.status}, ${JSON.stringify(view.counts)}`,
    options,
  );
}

/** How many executions are still QUEUED or RUNNING: these ids, or those whose id matches a LIKE pattern. */
export const openRuns = async (bench: BenchService, which: string[] | string) =>
  (
    await bench.service.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM execution_record WHERE tenant_id = $1 AND ${typeof which === 'string' ? 'execution_id LIKE $2' : 'execution_id = ANY($2)'} AND status IN ('QUEUED', 'RUNNING')`,
      [bench.tenant, which],
    )
  ).rows[0].n;

/** Until none of these executions (ids, or a LIKE pattern) is QUEUED or RUNNING; progress and cap as `waitFor`. */
export async function waitForRunsToEnd(bench: BenchService, what: string, which: string[] | string, options: WaitOptions = {}): Promise<void> {
  await waitFor(
    `${what} to end`,
    () => openRuns(bench, which),
    (open) => open === 0,
    (open) => `${open} still QUEUED or RUNNING`,
    options,
  );
}

/** When each of a job's items was admitted (the admission statement's own `now()`), ms since the epoch, in order. */
export async function admissionTimes(bench: BenchService, jobId: string): Promise<number[]> {
  const rows = await bench.service.db.query<{ at: string }>(
    `SELECT (extract(epoch FROM processed_at) * 1000)::float8 AS at FROM redrive_job_item
     WHERE tenant_id = $1 AND job_id = $2 AND state = 'ADMITTED' ORDER BY processed_at`,
    [bench.tenant, jobId],
  );
  return rows.rows.map((row) => Number(row.at));
}

/** The most admissions in any 1-second window [t, t + 1 s) (t at an admission: the busiest window starts at one). */
export function busiestSecond(times: number[]): number {
  let best = 0;
  let first = 0;
  for (let last = 0; last < times.length; last++) {
    while (times[last] - times[first] >= 1000) first++;
    best = Math.max(best, last - first + 1);
  }
  return best;
}

/** One ordinary submission: when it was sent (ms since the epoch) and its round trip in ms. */
export interface Sample {
  at: number;
  ms: number;
}

/**
 * Ordinary submissions at a steady `perSecond` (open loop: each starts on its own schedule,
 * whatever the previous one's latency), until `until()` is true (checked before each) or
 * `max` were sent; each one's send time and latency.
 */
export async function submitSteadily(bench: BenchService, prefix: string, perSecond: number, until: () => boolean, max = Infinity): Promise<Sample[]> {
  const samples: Sample[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < max && !until(); i++) {
    const due = started + (i * 1000) / perSecond;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (until()) break;
    const at = Date.now();
    inFlight.push(bench.submit(`${prefix}-${i}`).then((ms) => void samples.push({ at, ms })));
  }
  await Promise.all(inFlight);
  return samples.sort((a, b) => a.at - b.at);
}

/** p50 / p99 of latencies, ms with one decimal; the count. */
export function latencySummary(samples: Sample[]): { n: number; p50: number; p99: number } {
  const latencies = samples.map((sample) => sample.ms);
  if (latencies.length === 0) return { n: 0, p50: 0, p99: 0 };
  const r = (x: number) => Math.round(x * 10) / 10;
  return { n: latencies.length, p50: r(percentile(latencies, 50)), p99: r(percentile(latencies, 99)) };
}

/** The worker role in a process of its own (bench/role-worker.ts), on the same settings; resolves once it serves. */
async function startRoleWorker(settings: Record<string, unknown>, holdMs: number, nice?: number): Promise<ChildProcess> {
  const env = { BENCH_SETTINGS: JSON.stringify(settings), BENCH_HOLD_MS: String(holdMs) };
  return (await startFixture(join(import.meta.dirname, 'role-worker.ts'), env, /^ready/m, 120_000, "the bench's worker process", nice)).child;
}

async function stopRoleWorker(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
