/**
 * Growth figure: does an operator read cost more when the store holds more history? Two
 * stores, each in its own database, seeded set-based (test/helpers/seed.ts) at the same
 * traffic (one execution per second, ending now) to a small and a big size; every read an
 * operator makes (GET /metrics, both triage reads, every list endpoint with each documented
 * filter, a record) is timed over real HTTP against each, round by round with the order of
 * the two stores alternating, so both see the same machine load. Plus the round trip of an
 * admission and of a step commit against each store. No Temporal is involved: reads never
 * call it.
 */
import { randomUUID } from 'node:crypto';
import { serve, type ServerType } from '@hono/node-server';
import { Client, Connection } from '@temporalio/client';
import { createApp } from '../src/api/app';
import { sha256Hex } from '../src/api/middleware/bearer-auth';
import { loadConfig } from '../src/config/config';
import type { Log } from '../src/log';
import { Metrics } from '../src/metrics';
import { definePipeline, localStep } from '../src/pipeline/define';
import { PipelineRegistry } from '../src/pipeline/registry';
import { CheckpointPublisher } from '../src/service/checkpoints';
import { ExecutionService } from '../src/service/executions';
import { HistoryService } from '../src/service/history';
import { RedriveJobs } from '../src/service/redrive-jobs';
import { RedriveService } from '../src/service/redrive';
import { ExecutionStore } from '../src/store/execution-store';
import { Dispatcher } from '../src/temporal/dispatcher';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres';
import { SEEDED_CODES, seedStore } from '../test/helpers/seed';
import { percentile, spread } from './stats';
import { createStores } from '../src/store/stores';

export interface GrowthOptions {
  /** executions in each store, smallest first; rejects are half of it, envelopes 1 in 33 */
  sizes: number[];
  /** timed calls of each read per store (after 2 untimed ones) */
  samples: number;
  /** admissions (each followed by 5 step commits) timed per store */
  commits: number;
  /** extra failures of a bad day in the last 24 h of each store (default 30,000) */
  badDay?: number;
  /** bulk re-drive jobs seeded in each store (default 20 of 10,000 items) */
  jobs?: { count: number; items: number };
  log: Log;
  say: (line: string) => void;
}

export interface ReadFigure {
  read: string;
  /**
   * signals and list: ≤ 50 ms at the big size and ratio ≤ 2; record: ratio ≤ 2; window: a
   * read whose window the small store's history does not fill (24 h of triage), ≤ 50 ms only;
   * bulk: a job's dry run over its whole selection (its cost follows the items), ratio ≤ 2 only.
   */
  kind: 'signals' | 'list' | 'record' | 'window' | 'bulk';
  /** median (min–max) ms per size */
  ms: { median: number; min: number; max: number }[];
  ratio: number;
}

export interface GrowthResults {
  sizes: { executions: number; envelopes: number; rejects: number; seedSeconds: number; databaseMb: number }[];
  reads: ReadFigure[];
  admissionMs: { p50: number; p99: number }[];
  stepCommitMs: { p50: number; p99: number }[];
  targets: { readMedianMs: number; ratio: number };
  badDay?: number;
  jobs?: { count: number; items: number };
}

const TOKEN = 'growth-bench-token';
const TARGET_MS = 50;
const TARGET_RATIO = 2;
const steps = Array.from({ length: 5 }, (_, i) => localStep(`s${i}`, (input: unknown) => input));
const pipelines = [definePipeline({ name: 'demo', steps })];

interface Store {
  size: number;
  database: TestDatabase;
  server: ServerType;
  base: string;
  /** a SUCCEEDED execution of tenant big, and the cursors of a second page */
  record: string;
  executionsCursor: string;
  dlqCursor: string;
  rejectsCursor: string;
  /** the newest bulk job, and a dry run's body naming up to 10,000 of the bad day's executions */
  job: string;
  dryRun: unknown;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

async function openStore(size: number, options: GrowthOptions, lazyClient: Client): Promise<Store & { seedSeconds: number }> {
  const started = Date.now();
  const database = await createTestDatabase();
  await seedStore(database.db, {
    executions: size,
    rejects: Math.floor(size / 2),
    rebuildIndexes: size >= 100_000,
    progress: (line) => options.say(`  [${size}] ${line}`),
    badDay: options.badDay ?? 30_000,
    jobs: options.jobs ?? { count: 20, items: 10_000 },
  });
  const seedSeconds = Math.round((Date.now() - started) / 1000);
  const db = database.db;
  const config = loadConfig(
    {},
    { 'pipeline.auth.tokens': [{ sha256: sha256Hex(TOKEN), role: 'admin' }], 'pipeline.store.url': database.url, 'pipeline.temporal.address': '127.0.0.1:1' },
  );
  const registry = new PipelineRegistry(config, pipelines);
  const stores = createStores(db);
  const { executions: store, effects, signals } = stores;
  const dispatcher = new Dispatcher(db, lazyClient, registry, 'growth', options.log);
  const metrics = new Metrics(signals, config['pipeline.defaults.retry-limit']);
  const executions = new ExecutionService(store, stores.definitions, registry, dispatcher, options.log, metrics);
  const redrive = new RedriveService(store, effects, stores.definitions, registry, dispatcher, lazyClient, options.log, metrics);
  const checkpoints = new CheckpointPublisher(
    stores.checkpoints,
    registry,
    executions,
    dispatcher,
    options.log,
    { concurrency: 1, slowMs: 5000, intervalMs: 1000 },
    metrics,
  );
  const app = createApp({
    config,
    log: options.log,
    store,
    effects,
    dlq: stores.dlq,
    definitions: stores.definitions,
    executions,
    redrive,
    registry,
    rejects: stores.rejects,
    signals,
    checkpoints,
    metrics,
    fleet: {
      groups: stores.groups,
      history: new HistoryService(store, stores.history, stores.definitions, registry),
      jobs: new RedriveJobs(stores.jobs, redrive, lazyClient, 'growth', options.log),
    },
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // A SUCCEEDED record from the middle of history, and second-page cursors from real first pages.
  let middle = Math.floor(size / 2);
  while (middle % 50 === 0 || middle % 33 === 0 || middle % 1000 === 7) middle++;
  const record = `e${String(middle).padStart(9, '0')}`;
  // `&cursor=…` of a first page's next page; nothing when a small store has one page only.
  const page = async (path: string) => {
    const next = ((await (await call(base, path)).json()) as { nextCursor: string | null }).nextCursor;
    return { nextCursor: next ? `&cursor=${next}` : '' };
  };
  const executionsCursor = (await page('/pipeline/admin/tenants/big/executions?limit=50')).nextCursor;
  const dlqCursor = (await page('/pipeline/admin/tenants/big/dlq?limit=50')).nextCursor;
  const rejectsCursor = (await page('/pipeline/admin/tenants/big/rejects?limit=50')).nextCursor;
  const job = (await db.query<{ job_id: string }>(`SELECT job_id FROM redrive_job WHERE tenant_id = 'big' ORDER BY created_at DESC LIMIT 1`)).rows[0]?.job_id;
  const bad = await db.query<{ execution_id: string }>(
    `SELECT execution_id FROM execution_record WHERE tenant_id = 'big' AND status = 'FAILED' AND execution_id LIKE 'bad-%' ORDER BY execution_id LIMIT 10000`,
  );
  const dryRun = { selection: { executionIds: bad.rows.map((row) => row.execution_id) }, reason: 'growth', allowFailed: true };
  return { size, database, server, base, record, executionsCursor, dlqCursor, rejectsCursor, job, dryRun, seedSeconds };
}

/** GET `path`, or POST `body` as JSON to it; anything but 200 is an error. */
async function call(base: string, path: string, body?: unknown): Promise<Response> {
  const res = await fetch(`${base}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`${body === undefined ? 'GET' : 'POST'} ${path} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  return res;
}

/** Every operator read, as a path per store. */
function reads(): { read: string; kind: ReadFigure['kind']; path: (s: Store) => string; body?: (s: Store) => unknown }[] {
  const t = '/pipeline/admin/tenants/big';
  const fixed = (read: string, kind: ReadFigure['kind'], path: string) => ({ read, kind, path: () => path });
  return [
    fixed('GET /metrics', 'signals', '/metrics'),
    fixed('GET /admin/triage?window=15m', 'signals', '/pipeline/admin/triage?window=15m'),
    fixed('GET …/tenants/big/triage?window=15m', 'signals', `${t}/triage?window=15m`),
    fixed('GET …/tenants/big/triage?window=24h', 'window', `${t}/triage?window=24h`),
    fixed('GET …/executions?limit=50', 'list', `${t}/executions?limit=50`),
    { read: 'GET …/executions?limit=50&cursor= (page 2)', kind: 'list', path: (s) => `${t}/executions?limit=50${s.executionsCursor}` },
    ...(['QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'] as const).map((status) =>
      fixed(`GET …/executions?status=${status}&limit=50`, 'list', `${t}/executions?status=${status}&limit=50`),
    ),
    fixed('GET …/dlq?limit=50', 'list', `${t}/dlq?limit=50`),
    fixed(`GET …/dlq?errorCode=${SEEDED_CODES.frequent}`, 'list', `${t}/dlq?errorCode=${SEEDED_CODES.frequent}&limit=50`),
    fixed(`GET …/dlq?errorCode=${SEEDED_CODES.rare} (rare)`, 'list', `${t}/dlq?errorCode=${SEEDED_CODES.rare}&limit=50`),
    fixed('GET …/dlq?errorCode=ABSENT_CODE', 'list', `${t}/dlq?errorCode=ABSENT_CODE&limit=50`),
    fixed('GET …/dlq?terminalReason=retry_exhausted', 'list', `${t}/dlq?terminalReason=retry_exhausted&limit=50`),
    fixed('GET …/dlq?terminalReason=non_retryable', 'list', `${t}/dlq?terminalReason=non_retryable&limit=50`),
    fixed(
      `GET …/dlq?terminalReason=non_retryable&errorCode=${SEEDED_CODES.frequent} (none)`,
      'list',
      `${t}/dlq?terminalReason=non_retryable&errorCode=${SEEDED_CODES.frequent}&limit=50`,
    ),
    fixed(
      `GET …/dlq?terminalReason=non_retryable&errorCode=${SEEDED_CODES.nonRetryable}`,
      'list',
      `${t}/dlq?terminalReason=non_retryable&errorCode=${SEEDED_CODES.nonRetryable}&limit=50`,
    ),
    { read: 'GET …/dlq?limit=50&cursor= (page 2)', kind: 'list', path: (s) => `${t}/dlq?limit=50${s.dlqCursor}` },
    fixed('GET …/rejects?limit=50', 'list', `${t}/rejects?limit=50`),
    { read: 'GET …/rejects?limit=50&cursor= (page 2)', kind: 'list', path: (s) => `${t}/rejects?limit=50${s.rejectsCursor}` },
    fixed('GET …/dlq/groups', 'list', `${t}/dlq/groups`),
    fixed(`GET …/dlq/groups?errorCode=${SEEDED_CODES.rare}`, 'list', `${t}/dlq/groups?errorCode=${SEEDED_CODES.rare}`),
    fixed('GET …/pipelines', 'list', `${t}/pipelines`),
    fixed('GET …/redrive-jobs (20 jobs of 10,000 items)', 'list', `${t}/redrive-jobs?limit=20`),
    { read: 'GET …/redrive-jobs/{id} (10,000 items)', kind: 'list', path: (s) => `${t}/redrive-jobs/${s.job}` },
    { read: 'POST …/redrive-jobs?dryRun=true (10,000 executionIds)', kind: 'bulk', path: () => `${t}/redrive-jobs?dryRun=true`, body: (s) => s.dryRun },
    { read: 'GET …/executions/{id}', kind: 'record', path: (s) => `${t}/executions/${s.record}` },
    { read: 'GET …/executions/{id}/history', kind: 'record', path: (s) => `${t}/executions/${s.record}/history` },
  ];
}

/** Admission (one statement) and the five step commits of an execution, timed one by one. */
async function commitLatency(store: Store, count: number): Promise<{ admission: number[]; commit: number[] }> {
  const executions = new ExecutionStore(store.database.db);
  const admission: number[] = [];
  const commit: number[] = [];
  for (let i = 0; i < count; i++) {
    const executionId = `lat-${randomUUID()}`;
    let t0 = performance.now();
    await executions.create(
      {
        tenantId: 'big',
        executionId,
        executionKey: null,
        pipeline: 'demo',
        workflowId: `pipeline/big/${executionId}`,
        stepCount: 5,
        input: { n: i },
        correlationId: null,
        resourceType: null,
        resourceName: null,
      },
      { steps: 5 },
      { owner: 'growth', ms: 60_000 },
    );
    admission.push(performance.now() - t0);
    await executions.begin({ tenantId: 'big', executionId, runId: 'run', dispatchId: 'start' });
    for (let step = 0; step < 5; step++) {
      t0 = performance.now();
      const result = await executions.commitSucceeded({ tenantId: 'big', executionId, stepIndex: step, attempt: 1, output: { n: i, step } });
      commit.push(performance.now() - t0);
      if (!result.committed) throw new Error(`step ${step} of ${executionId} did not commit`);
    }
  }
  return { admission, commit };
}

export async function measureGrowth(options: GrowthOptions): Promise<GrowthResults> {
  const { say } = options;
  const lazyClient = new Client({ connection: Connection.lazy({ address: '127.0.0.1:1' }) });
  const stores: (Store & { seedSeconds: number })[] = [];
  try {
    for (const size of options.sizes) {
      say(`growth: seeding a store of ${size.toLocaleString('en')} executions`);
      stores.push(await openStore(size, options, lazyClient));
    }
    const list = reads();
    const timings = list.map(() => stores.map(() => [] as number[]));
    for (const read of list) {
      for (const store of stores) for (let w = 0; w < 2; w++) await (await call(store.base, read.path(store), read.body?.(store))).arrayBuffer();
    }
    say(`growth: ${list.length} reads × ${options.samples} rounds on ${stores.length} stores`);
    for (let round = 0; round < options.samples; round++) {
      const order = round % 2 === 0 ? stores.map((_, i) => i) : stores.map((_, i) => stores.length - 1 - i);
      for (const [r, read] of list.entries()) {
        for (const s of order) {
          const t0 = performance.now();
          await (await call(stores[s].base, read.path(stores[s]), read.body?.(stores[s]))).arrayBuffer();
          timings[r][s].push(performance.now() - t0);
        }
      }
    }
    const figures: ReadFigure[] = list.map((read, r) => {
      const ms = timings[r].map((samples) => {
        const { median, min, max } = spread(samples, 1);
        return { median, min, max };
      });
      return { read: read.read, kind: read.kind, ms, ratio: Math.round((ms.at(-1)!.median / ms[0].median) * 100) / 100 };
    });
    say(`growth: ${options.commits} admissions and ${options.commits * 5} step commits per store`);
    const latency = [];
    for (const store of stores) latency.push(await commitLatency(store, options.commits));
    const sizes = [];
    for (const store of stores) {
      const mb = (await store.database.db.query<{ mb: number }>('SELECT (pg_database_size(current_database()) / 1048576)::int AS mb')).rows[0].mb;
      const envelopes = (await store.database.db.query<{ n: number }>('SELECT count(*)::int AS n FROM execution_dlq')).rows[0].n;
      sizes.push({ executions: store.size, envelopes, rejects: Math.floor(store.size / 2), seedSeconds: store.seedSeconds, databaseMb: mb });
    }
    return {
      sizes,
      reads: figures,
      admissionMs: latency.map((l) => ({ p50: round1(percentile(l.admission, 50)), p99: round1(percentile(l.admission, 99)) })),
      stepCommitMs: latency.map((l) => ({ p50: round1(percentile(l.commit, 50)), p99: round1(percentile(l.commit, 99)) })),
      targets: { readMedianMs: TARGET_MS, ratio: TARGET_RATIO },
      badDay: options.badDay ?? 30_000,
      jobs: options.jobs ?? { count: 20, items: 10_000 },
    };
  } finally {
    for (const store of stores) {
      await new Promise((done) => store.server.close(done));
      await store.database.drop();
    }
    await lazyClient.connection.close().catch(() => undefined);
  }
}

const compact = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n));

/** The growth table for BENCHMARKS.md. */
export function renderGrowth(results: GrowthResults, meta: { date: string; load: string; loadEnd?: string; machine: string; samples: number }): string {
  const [small, big] = [results.sizes[0], results.sizes.at(-1)!];
  const s = (x: { median: number; min: number; max: number }) => `${x.median} (${x.min}–${x.max})`;
  const met = (f: ReadFigure) => {
    const bigMs = f.ms.at(-1)!.median;
    const fast = f.kind === 'record' || f.kind === 'bulk' || bigMs <= results.targets.readMedianMs;
    const flat = f.kind === 'window' || f.ratio <= results.targets.ratio;
    const verdict =
      fast && flat
        ? 'met'
        : `**not met** (${[!fast && `> ${results.targets.readMedianMs} ms`, !flat && `ratio > ${results.targets.ratio}`].filter(Boolean).join(', ')})`;
    if (f.kind === 'bulk') return `${verdict} (ratio only: its cost follows the job's items)`;
    return f.kind === 'window' ? `${verdict} (≤ ${results.targets.readMedianMs} ms; no ratio target: the small store holds less than this window)` : verdict;
  };
  const rows = [
    `Measured ${meta.date} on ${meta.machine}, a machine shared with colleagues' builds and tests: load average (1 / 5 / 15 min) ${meta.load} at the start${meta.loadEnd ? ` and ${meta.loadEnd} at the end` : ''}. Absolute times move with that load; the two stores were measured round by round in alternation, so they share it.`,
    `Stores: ${results.sizes.map((z) => `${compact(z.executions)} executions / ${z.envelopes.toLocaleString('en')} DLQ envelopes / ${compact(z.rejects)} rejects (${z.databaseMb.toLocaleString('en')} MB, seeded in ${z.seedSeconds} s)`).join(' and ')}; one execution per second of history plus a bad day (${(results.badDay ?? 0).toLocaleString('en')} more failures in the last 24 h, one group) and ${results.jobs ? `${results.jobs.count} bulk jobs of ${results.jobs.items.toLocaleString('en')} items` : 'no bulk jobs'}, so both stores hold the same last 24 h.`,
    `Median (min–max) ms of ${meta.samples} calls over loopback HTTP. Targets: at ${compact(big.executions)}, /metrics, triage and every list ≤ ${results.targets.readMedianMs} ms median; ratio ${compact(big.executions)} ÷ ${compact(small.executions)} ≤ ${results.targets.ratio} for every read.`,
    '',
    `| Read | ${compact(small.executions)} | ${compact(big.executions)} | Ratio | Target |`,
    '|---|---|---|---|---|',
    ...results.reads.map((f) => `| \`${f.read}\` | ${s(f.ms[0])} | ${s(f.ms.at(-1)!)} | ${f.ratio} | ${met(f)} |`),
    `| Admission round trip (p50 / p99) | ${results.admissionMs[0].p50} / ${results.admissionMs[0].p99} | ${results.admissionMs.at(-1)!.p50} / ${results.admissionMs.at(-1)!.p99} | ${Math.round((results.admissionMs.at(-1)!.p50 / results.admissionMs[0].p50) * 100) / 100} | report |`,
    `| Step commit round trip (p50 / p99) | ${results.stepCommitMs[0].p50} / ${results.stepCommitMs[0].p99} | ${results.stepCommitMs.at(-1)!.p50} / ${results.stepCommitMs.at(-1)!.p99} | ${Math.round((results.stepCommitMs.at(-1)!.p50 / results.stepCommitMs[0].p50) * 100) / 100} | report |`,
  ];
  return rows.join('\n');
}
