/**
 * The benchmark suite: what the orchestration layer costs on top of bare Temporal,
 * measured side by side against the real dev server and the real Postgres. Every ratio
 * compares two variants run in the same process, on the same worker and task queue,
 * interleaved round by round (the order alternates).
 */
import { execFileSync, spawn } from 'node:child_process';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { PipelineExecutionId, PipelineName, PipelineTenant } from '../src/workflows/search-attributes';
import { bundleWorkflowCode, DefaultLogger, Worker } from '@temporalio/worker';
import { serve } from '@hono/node-server';
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { createActivities } from '../src/activities/engine-activities';
import { createApp } from '../src/api/app';
import { sha256Hex } from '../src/api/middleware/bearer-auth';
import { loadConfig } from '../src/config/config';
import { workflowIdFor } from '../src/ids';
import { createLog, type Log } from '../src/log';
import { PipelineRegistry } from '../src/pipeline/registry';
import { CheckpointPublisher } from '../src/service/checkpoints';
import { ExecutionService } from '../src/service/executions';
import { RedriveService } from '../src/service/redrive';
import { EffectStore } from '../src/store/effect-store';
import { ExecutionStore } from '../src/store/execution-store';
import { createPgDb } from '../src/store/db';
import { resolveTemporalCli } from '../src/temporal/cli';
import { connectClient, connectNative, registerSearchAttributes, temporalConnectOptions, type TemporalConnectOptions } from '../src/temporal/connection';
import { startDevServer } from '../src/temporal/dev-server';
import { Dispatcher } from '../src/temporal/dispatcher';
import { installSdkLogging } from '../src/temporal/sdk-logging';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres';
import type { FloorWith } from './workflows';
import { admitFloor, bareActivities, FLOOR_SCHEMA, floorActivities } from './bare';
import { cpuDelta, cpuSnapshot, type CpuSample } from './cpu';
import { historyBytes, type HistoryBytes } from './history-bytes';
import { benchPipelines } from './pipelines';
import { percentile, pool, spread, type Spread } from './stats';
import { createStores, type Stores } from '../src/store/stores';
import { measureFastPath } from './fast-path';

export interface BenchOptions {
  /** executions per variant per round (figure 1) */
  n: number;
  /** rounds of every repeated figure; ≥ 5 for a report */
  runs: number;
  concurrency: number;
  /** executions parked / running for the memory figure */
  memoryCount: number;
  /** envelopes per DLQ round */
  dlqCount: number;
  /** FAILED executions re-driven per round (figure 4) */
  redriveCount: number;
  /** use this dev server instead of starting one */
  temporalAddress?: string;
  progress?: (line: string) => void;
  /** run only these figures (overhead, events, roundtrips, redrive, memory, dlq); all when absent */
  only?: string[];
  /** executions per pipeline when counting round trips (figure 3); default 10 */
  roundTripExecutions?: number;
  /** RSS samples (0.5 s apart) per memory phase; default max(5, runs) */
  memorySamples?: number;
  /**
   * Figure 1 for this variant alone, for a CPU profile of it (bench/profile.ts): the figure is then
   * `{ variant, n, rate, window }`, the window being the measured rounds' bounds in µs of the
   * monotonic clock `node --cpu-prof` stamps its samples with.
   */
  variant?: 'engine' | 'bare';
  /**
   * Parts of the engine the floor (1c) carries too, to measure what each costs on its own:
   * `metadata` (the start's memo, search attributes and UI summary/details), `heartbeat` (a 30 s
   * heartbeat timeout per activity), `summary` (each activity's UI summary and non-retryable
   * types), `bytes` (each activity's input as large as the engine's step request).
   */
  floorWith?: string[];
}

export interface BenchResults {
  meta: Record<string, unknown>;
  figures: Record<string, any>;
}

const TENANT = 'bench';
const WORKFLOWS_PATH = fileURLToPath(new URL('./workflows.ts', import.meta.url));

/** The benchmark's own database: its Postgres backends are the ones whose CPU counts. */
const databaseName = (database: TestDatabase) => new URL(database.url).pathname.slice(1);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

/** What every figure needs: the service parts, the worker's task queue and two runners. */
export interface Bench {
  options: BenchOptions;
  say: (line: string) => void;
  log: Log;
  database: TestDatabase;
  client: Client;
  registry: PipelineRegistry;
  store: ExecutionStore;
  effects: EffectStore;
  /** every store on the bench's database (store/stores.ts) */
  stores: Stores;
  dispatcher: Dispatcher;
  /** starts what stayed pending on the bench's task queue (a figure with its own queue pauses it) */
  sweeper: Sweeper;
  executions: ExecutionService;
  taskQueue: string;
  address: string;
  temporalPid?: number;
  /** Temporal calls this process's client made, by method (StartWorkflowExecution, …): counts, not times */
  temporalCalls: Record<string, number>;
  /** one execution of a pipeline through the engine, to its end; returns the workflowId */
  runEngine(pipeline: string, input?: unknown): Promise<string>;
  /** one bare workflow of `steps` no-op activities, to its end; returns the workflowId */
  runBare(steps: number, failTimes?: number): Promise<string>;
  /** one bare workflow of `steps` no-op local activities, to its end (figure 1f) */
  runBareLocal(steps: number): Promise<string>;
  /** figure 1c's floor: a record row, then a bare workflow committing one Postgres row per step */
  runFloor(steps: number): Promise<string>;
  /** runs a worker of the bench's workflows and activities on `taskQueue` until `until` settles (figure 4d's held runs) */
  drain(taskQueue: string, until: Promise<void>): Promise<void>;
}

/** How often the benchmarks' sweepers look for starts that stayed pending. */
const SWEEP_MS = 1000;

interface Sweeper {
  start(): void;
  stop(): Promise<void>;
}

/**
 * The deadline of one start's Temporal calls, as the tests' engine has it (the product's default
 * is 5 s): under `npm test`'s smoke on a loaded machine a start can pass 5 s, go pending, and its
 * release query would then be counted in the round-trip figures that `bench/bounds.json` holds.
 */
const CALL_TIMEOUT_MS = 30_000;

/**
 * As in the service: a start Temporal did not answer in time stays pending, and a sweeper starts
 * it (on a loaded machine a start can miss its 5 s deadline; with no sweeper that execution never
 * runs and a benchmark waits for it forever). On a pool of its own, so the round-trip figure does
 * not count its queries; one sweeper at a time per database, since the sweeper starts every
 * pending row on its own task queue.
 */
function sweeperFor(url: string, client: Client, registry: PipelineRegistry, taskQueue: string, log: Log): Sweeper & { close(): Promise<void> } {
  const db = createPgDb(url, { max: 2 });
  const dispatcher = new Dispatcher(db, client, registry, taskQueue, log, CALL_TIMEOUT_MS);
  const sweeper = {
    start: () => dispatcher.startSweeper(SWEEP_MS),
    stop: () => dispatcher.stopSweeper(),
    close: async () => {
      await dispatcher.stopSweeper();
      await db.close();
    },
  };
  sweeper.start();
  return sweeper;
}

/**
 * Waits for a run's result. A start that stayed pending has no run yet: the sweeper starts it,
 * so until then "not found" means "not started yet", not an error.
 */
async function resultOf(client: Client, workflowId: string, pending: boolean): Promise<unknown> {
  for (;;) {
    try {
      return await client.workflow.getHandle(workflowId).result();
    } catch (err) {
      if (!(pending && err instanceof WorkflowNotFoundError)) throw err;
      await new Promise((resolve) => setTimeout(resolve, SWEEP_MS));
    }
  }
}

const WORKER_OPTIONS = { maxConcurrentActivityTaskExecutions: 100, maxConcurrentWorkflowTaskExecutions: 40, maxCachedWorkflows: 1000 };

export async function runBenchmarks(options: BenchOptions): Promise<BenchResults> {
  const say = options.progress ?? (() => undefined);
  const log = createLog({ level: 'error' });
  installSdkLogging(log, 'ERROR');

  const devServer = options.temporalAddress ? undefined : await startDevServer();
  const address = options.temporalAddress ?? devServer!.address;
  const database = await createTestDatabase();
  const taskQueue = `bench-${randomBytes(4).toString('hex')}`;
  const config = loadConfig({}, { 'pipeline.auth.tokens': [], 'pipeline.store.url': database.url, 'pipeline.temporal.address': address });
  const registry = new PipelineRegistry(config, benchPipelines);
  const stores = createStores(database.db);
  const { executions: store, effects } = stores;
  const temporalCalls: Record<string, number> = {};
  const countCalls: Interceptor = (callOptions, nextCall) => {
    const method = callOptions.method_definition.path.slice(callOptions.method_definition.path.lastIndexOf('/') + 1);
    temporalCalls[method] = (temporalCalls[method] ?? 0) + 1;
    return new InterceptingCall(nextCall(callOptions));
  };
  // The service's own client: the SDK's retry of a transient failure (a connection the server
  // dropped) stays; the count sees every attempt on the wire.
  // A Temporal of the caller's own is reached as the service reaches one: TLS and an API key from the
  // environment's profile (TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_CONFIG_FILE + TEMPORAL_PROFILE).
  const connect: TemporalConnectOptions = options.temporalAddress ? temporalConnectOptions(address, process.env) : { address };
  const connection = await connectClient(connect, [countCalls]);
  const client = new Client({ connection });
  if (options.temporalAddress) {
    // A Temporal of the caller's own: the engine's search attributes, as the service registers them at start-up
    // (the bench's dev server is started with them). Its CPU is not a process of the bench's: not counted.
    const failed = await registerSearchAttributes(connection, 'default', log);
    if (failed) {
      say(
        `the engine's search attributes could not be registered on namespace default (${failed}): the engine's starts will fail until they are (temporal operator search-attribute create)`,
      );
    }
    say(`Temporal at ${options.temporalAddress}: its CPU is not counted (cpu figures show the engine's Node and Postgres only)`);
  }
  const dispatcher = new Dispatcher(database.db, client, registry, taskQueue, log, CALL_TIMEOUT_MS);
  const sweeper = sweeperFor(database.url, client, registry, taskQueue, log);
  const executions = new ExecutionService(store, stores.definitions, registry, dispatcher, log);
  const nativeConnection = await connectNative(connect);
  // One set of activities for the bench's worker and figure 4d's drain workers.
  const activities = { ...createActivities({ store, effects, registry, log }), ...bareActivities, ...floorActivities(database.db) };
  const worker = await Worker.create({
    connection: nativeConnection,
    taskQueue,
    workflowsPath: WORKFLOWS_PATH,
    activities,
    ...WORKER_OPTIONS,
  });
  const workerDone = worker.run();
  let drainBundle: { code: string } | undefined;

  let seq = 0;
  const nextId = (label: string) => `${label}-${++seq}`;
  const bench: Bench = {
    options,
    say,
    log,
    database,
    client,
    registry,
    store,
    effects,
    stores,
    dispatcher,
    executions,
    taskQueue,
    address,
    temporalPid: devServer?.pid,
    temporalCalls,
    sweeper,
    async runEngine(pipeline, input = null) {
      const executionId = nextId(pipeline);
      const outcome = await executions.start(TENANT, { pipeline, executionId, input });
      const workflowId = workflowIdFor(TENANT, executionId);
      await resultOf(client, workflowId, outcome.dispatch === 'pending');
      return workflowId;
    },
    async runBare(steps, failTimes = 0) {
      const handle = await client.workflow.start('bareWorkflow', { workflowId: nextId('bare'), taskQueue, args: [steps, null, failTimes] });
      await handle.result();
      return handle.workflowId;
    },
    async runBareLocal(steps) {
      const handle = await client.workflow.start('bareLocalWorkflow', { workflowId: nextId('bare-local'), taskQueue, args: [steps, null] });
      await handle.result();
      return handle.workflowId;
    },
    async drain(queue, until) {
      drainBundle ??= await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
      const drainer = await Worker.create({
        connection: nativeConnection,
        taskQueue: queue,
        workflowBundle: drainBundle,
        activities,
        ...WORKER_OPTIONS,
      });
      await drainer.runUntil(until);
    },
    async runFloor(steps) {
      const id = nextId('floor');
      await admitFloor(database.db, id);
      const parts = options.floorWith ?? [];
      const withParts: FloorWith = {
        ...(parts.includes('heartbeat') ? { heartbeatMs: 30_000 } : {}),
        ...(parts.includes('summary') ? { summary: true } : {}),
        ...(parts.includes('bytes') ? { padBytes: 290 } : {}),
      };
      const metadata = parts.includes('metadata')
        ? {
            memo: { dispatchId: randomBytes(16).toString('hex') },
            typedSearchAttributes: new TypedSearchAttributes([
              { key: PipelineTenant, value: TENANT },
              { key: PipelineExecutionId, value: id },
              { key: PipelineName, value: 'noop5' },
            ]),
            staticSummary: `noop5 v1 · tenant ${TENANT} · execution ${id}`,
            staticDetails: `**Pipeline** noop5 version 1, 5 steps: 0:a(LOCAL) → 1:b(LOCAL) → 2:c(LOCAL) → 3:d(LOCAL) → 4:e(LOCAL)\n\n**Resumes** at step 0, attempt 1`,
          }
        : {};
      const handle = await client.workflow.start('floorWorkflow', { workflowId: id, taskQueue, args: [id, steps, null, withParts], ...metadata });
      await handle.result();
      return handle.workflowId;
    },
  };

  const figures: Record<string, unknown> = {};
  const wanted = (figure: string) => !options.only || options.only.includes(figure);
  try {
    await database.db.exec(FLOOR_SCHEMA);
    say('warm-up (not counted)');
    await pool(Math.min(20, options.n), options.concurrency, async () => {
      await bench.runEngine('noop5');
      await bench.runBare(5);
      await bench.runFloor(5);
    });
    if (options.variant) figures.variantAlone = await measureVariantAlone(bench, options.variant);
    else if (wanted('overhead')) figures.engineOverhead = await measureOverhead(bench);
    if (!options.variant && wanted('fastpath')) figures.fastPath = await measureFastPath(bench);
    if (wanted('events')) figures.historyEvents = await measureEvents(bench);
    if (wanted('bytes')) figures.historyBytes = await measureBytes(bench);
    if (wanted('commit')) figures.stepCommit = await measureCommit(bench);
    if (wanted('roundtrips')) figures.postgresRoundTrips = await measureRoundTrips(bench);
    if (wanted('redrive')) {
      figures.redriveThroughput = await measureRedrive(bench, false);
      figures.redriveAlone = await measureRedrive(bench, true);
    }
    if (wanted('memory')) figures.workerMemory = await measureMemory(bench);
    if (wanted('dlq')) figures.dlqPublish = await measureDlq(bench);
  } finally {
    await sweeper.close();
    worker.shutdown();
    await workerDone;
    await nativeConnection.close();
    await connection.close();
    await database.drop();
    await devServer?.stop();
  }

  const cli = resolveTemporalCli();
  return {
    meta: {
      date: new Date().toISOString(),
      cores: cpus().length,
      cpuModel: cpus()[0]?.model,
      node: process.version,
      temporalCli: cli.type === 'existing-path' ? execFileSync(cli.path, ['--version'], { encoding: 'utf8' }).trim() : 'SDK download',
      devServer: devServer?.settings ?? `existing server at ${address}`,
      worker: { ...WORKER_OPTIONS, sameWorkerAndTaskQueueForBothVariants: true },
      options: {
        n: options.n,
        runs: options.runs,
        concurrency: options.concurrency,
        memoryCount: options.memoryCount,
        dlqCount: options.dlqCount,
        redriveCount: options.redriveCount,
      },
    },
    figures,
  };
}

/**
 * Figure 1: executions/s of 5 no-op steps through the engine vs a bare workflow, interleaved, with
 * CPU by process; and 1c, the floor between them (bare plus one Postgres commit per step), in the
 * same rounds: how much of the engine's cost over bare is the persistence the product exists for.
 */
async function measureOverhead(bench: Bench) {
  const { options, say } = bench;
  type Variant = 'engine' | 'bare' | 'floor';
  const rates: Record<Variant, number[]> = { engine: [], bare: [], floor: [] };
  const cpu: Record<Variant, CpuSample[]> = { engine: [], bare: [], floor: [] };
  const ratios: number[] = [];
  const floorRatios: number[] = [];
  const engineToFloor: number[] = [];
  for (let round = 0; round < options.runs; round++) {
    const measure = async (variant: Variant) => {
      const cpuBefore = cpuSnapshot(bench.temporalPid, databaseName(bench.database));
      const started = performance.now();
      await pool(options.n, options.concurrency, () => runVariant(bench, variant));
      const rate = options.n / ((performance.now() - started) / 1000);
      cpu[variant].push(cpuDelta(cpuBefore, cpuSnapshot(bench.temporalPid, databaseName(bench.database)), options.n));
      rates[variant].push(rate);
      return rate;
    };
    // Every order in turn, so each variant is first, second and last as often as the others.
    const order = everyOrder(['engine', 'bare', 'floor'] as const, round);
    const got: Record<string, number> = {};
    for (const variant of order) got[variant] = await measure(variant);
    ratios.push(got.engine / got.bare);
    floorRatios.push(got.floor / got.bare);
    engineToFloor.push(got.engine / got.floor);
    say(
      `engine overhead ${round + 1}/${options.runs}: engine ${got.engine.toFixed(1)}/s, bare ${got.bare.toFixed(1)}/s, floor ${got.floor.toFixed(1)}/s, ratio ${(got.engine / got.bare).toFixed(3)} (floor ÷ bare ${(got.floor / got.bare).toFixed(3)})`,
    );
  }
  // Engine ÷ bare CPU ms per execution, every process summed (this Node process, the dev server, the bench database's backends), per round.
  const total = (x: CpuSample) => x.node + x.temporal + x.postgres;
  const cpuRatios = cpu.engine.map((engine, round) => total(engine) / total(cpu.bare[round]));
  const floorCpuRatios = cpu.floor.map((floor, round) => total(floor) / total(cpu.bare[round]));
  // Counted, not assumed: every floor execution (warm-up included) committed one attempt row per step and ended SUCCEEDED.
  const floorRows = await bench.database.db.query<{ records: number; succeeded: number; attempts: number }>(
    `SELECT (SELECT count(*) FROM bench_floor_record) AS records, (SELECT count(*) FROM bench_floor_record WHERE status = 'SUCCEEDED' AND version = 6) AS succeeded,
            (SELECT count(*) FROM bench_floor_attempt) AS attempts`,
  );
  const cpuMedian = (samples: CpuSample[]) => ({
    node: spread(samples.map((x) => x.node)).median,
    temporal: spread(samples.map((x) => x.temporal)).median,
    postgres: spread(samples.map((x) => x.postgres)).median,
  });
  return {
    unit: 'executions/s',
    steps: 5,
    n: options.n,
    concurrency: options.concurrency,
    engine: spread(rates.engine),
    bare: spread(rates.bare),
    ratio: spread(ratios, 3),
    target: '≥ 0.95 (min ≥ 0.85)',
    cpuMsPerExecution: { engine: cpuMedian(cpu.engine), bare: cpuMedian(cpu.bare), floor: cpuMedian(cpu.floor) },
    cpuRatio: spread(cpuRatios, 3),
    cpuTarget: '≤ 1.10',
    floor: {
      about: 'bare Temporal plus one Postgres commit per step and a record row at admission (6 round trips; the engine makes 7)',
      rate: spread(rates.floor),
      ratio: spread(floorRatios, 3),
      cpuRatio: spread(floorCpuRatios, 3),
      engineToFloor: spread(engineToFloor, 3),
      executions: floorRows.rows[0].records,
      succeeded: floorRows.rows[0].succeeded,
      commitsPerExecution: floorRows.rows[0].attempts / floorRows.rows[0].records,
    },
  };
}

/** Round `round`'s order of three variants: the six orders in turn, so each variant is first, second and last as often. */
function everyOrder<V>(variants: readonly [V, V, V], round: number): V[] {
  const [a, b, c] = variants;
  const orders = [
    [a, b, c],
    [b, c, a],
    [c, a, b],
    [c, b, a],
    [a, c, b],
    [b, a, c],
  ];
  return orders[round % orders.length];
}

/** One of figure 1's executions: 5 no-op steps through the engine, a bare workflow of 5 activities, or the floor's. */
async function runVariant(bench: Bench, variant: 'engine' | 'bare' | 'floor'): Promise<void> {
  await (variant === 'engine' ? bench.runEngine('noop5') : variant === 'bare' ? bench.runBare(5) : bench.runFloor(5));
}
/** Figure 1's executions for one variant only, with the window a profile's samples are cut to (see BenchOptions.variant). */
async function measureVariantAlone(bench: Bench, variant: 'engine' | 'bare') {
  const { options } = bench;
  const startUs = Number(process.hrtime.bigint() / 1000n);
  for (let round = 0; round < options.runs; round++) {
    await pool(options.n, options.concurrency, () => runVariant(bench, variant));
  }
  const endUs = Number(process.hrtime.bigint() / 1000n);
  const n = options.n * options.runs;
  bench.say(`${variant} alone: ${n} executions at ${(n / ((endUs - startUs) / 1e6)).toFixed(1)}/s`);
  return { variant, n, rate: n / ((endUs - startUs) / 1e6), window: { startUs, endUs } };
}

/** Figure 2: history events per step and per retried attempt, read from real histories (5-step minus 1-step). */
async function measureEvents(bench: Bench) {
  bench.say('history events');
  const length = async (workflowId: string) => (await bench.client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0;
  const [e1, e5, eRetry] = [
    await length(await bench.runEngine('noop1')),
    await length(await bench.runEngine('noop5')),
    await length(await bench.runEngine('retry1', { failTimes: 2 })),
  ];
  const [b1, b5, bRetry] = [await length(await bench.runBare(1)), await length(await bench.runBare(5)), await length(await bench.runBare(1, 2))];
  const per = (one: number, five: number, retried: number) => ({
    oneStep: one,
    fiveSteps: five,
    perStep: (five - one) / 4,
    perRetriedAttempt: (retried - one) / 2,
    fixed: one - (five - one) / 4,
  });
  return { engine: per(e1, e5, eRetry), bare: per(b1, b5, bRetry), target: 'per step ≤ bare (6); per retried attempt ≤ 2' };
}

/**
 * Figure 2d: bytes of history per step and per execution, engine vs bare, and where the
 * engine's go (the start request, activity inputs, results, summaries). Counts, not times:
 * the smoke test holds them under a recorded bound.
 */
async function measureBytes(bench: Bench) {
  bench.say('history bytes');
  const bytesOf = async (workflowId: string) => historyBytes(await bench.client.workflow.getHandle(workflowId).fetchHistory());
  const [e1, e5] = [await bytesOf(await bench.runEngine('noop1')), await bytesOf(await bench.runEngine('noop5'))];
  const [b1, b5] = [await bytesOf(await bench.runBare(1)), await bytesOf(await bench.runBare(5))];
  const per = (one: HistoryBytes, five: HistoryBytes) => ({
    perStep: (five.total - one.total) / 4,
    fixed: one.total - (five.total - one.total) / 4,
    fiveSteps: five.total,
    fiveStepBreakdown: { ...five, byEventType: undefined },
    byEventType: five.byEventType,
  });
  return { unit: 'bytes (protobuf) of the history', engine: per(e1, e5), bare: per(b1, b5) };
}

/**
 * Figure 3d: what one step commit does in Postgres, from EXPLAIN (ANALYZE, BUFFERS) of the
 * commit statement (rolled back) on records at a middle and at the last step of 5: the
 * writes in the statement, the trigger calls they fire and the shared buffers they touch.
 */
async function measureCommit(bench: Bench) {
  bench.say('step commit statement');
  const prefix = `commit-${randomBytes(3).toString('hex')}-`;
  await bench.database.db.query(
    `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, segment_input, run_id)
     VALUES ('bench', $1 || 'middle', 'noop5', 'wf', 'RUNNING', 3, 5, 1, 1, '{}'::jsonb, 'run'), ('bench', $1 || 'last', 'noop5', 'wf', 'RUNNING', 6, 5, 4, 1, '{}'::jsonb, 'run')`,
    [prefix],
  );
  const explain = async (which: string, stepIndex: number) => {
    // Fenced by its run, as the engine's commits are.
    const change = { tenantId: 'bench', executionId: `${prefix}${which}`, stepIndex, attempt: 1, runId: 'run', output: { ok: true } };
    await bench.store.explainSucceeded(change); // warm
    return bench.store.explainSucceeded(change);
  };
  return { middleStep: await explain('middle', 1), lastStep: await explain('last', 4) };
}

/** Figure 3: Postgres round trips per step (marginal: 5-step minus 1-step executions, per step), from the query counter. */
async function measureRoundTrips(bench: Bench) {
  bench.say('postgres round trips');
  const queriesPer = async (pipeline: string, count = bench.options.roundTripExecutions ?? 10) => {
    const before = bench.database.db.stats.queries;
    for (let i = 0; i < count; i++) await bench.runEngine(pipeline);
    return (bench.database.db.stats.queries - before) / count;
  };
  const plain: number[] = [];
  const command: number[] = [];
  const perExecution: number[] = [];
  for (let round = 0; round < bench.options.runs; round++) {
    const [q1, q5, c1, c5] = [await queriesPer('noop1'), await queriesPer('noop5'), await queriesPer('cmd1'), await queriesPer('cmd5')];
    plain.push((q5 - q1) / 4);
    command.push((c5 - c1) / 4);
    perExecution.push(q5);
  }
  return {
    perSuccessfulStep: spread(plain),
    perCommandStep: spread(command),
    perFiveStepExecution: spread(perExecution),
    target: '≤ 2 per step, ≤ 3 per Command step',
  };
}

/** Figure 6: DLQ publish to the postgres provider: terminal-failure commits (record FAILED + envelope, one statement). */
async function measureDlq(bench: Bench) {
  const { options, database, store } = bench;
  bench.say('dlq publish');
  const rates: number[] = [];
  for (let round = 0; round < options.runs; round++) {
    const prefix = `dlq-${round}-`;
    await database.db.query(
      `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt, segment_input)
       SELECT 'bench', $1 || g, 'noop1', 'wf', 'RUNNING', 2, 1, 0, 1, '{}'::jsonb FROM generate_series(1, $2) g`,
      [prefix, options.dlqCount],
    );
    const started = performance.now();
    await pool(options.dlqCount, 16, async (i) => {
      const executionId = `${prefix}${i + 1}`;
      const transitionKey = `${executionId}:0:1`;
      await store.commitFailed({
        tenantId: 'bench',
        executionId,
        stepIndex: 0,
        attempt: 1,
        failure: {
          terminalReason: 'retry_exhausted',
          errorCode: 'BENCH',
          errorMessage: 'bench',
          transitionKey,
          step: 'noop',
          envelope: {
            tenantId: 'bench',
            executionId,
            transitionKey,
            transport: 'LOCAL',
            platform: 'bench',
            terminalStatus: 'FAILED',
            createdAtEpochMs: Date.now(),
            terminalReason: 'retry_exhausted',
            errorCode: 'BENCH',
            errorMessage: 'bench',
            retryable: true,
            retriesObserved: 5,
          },
        },
      });
    });
    rates.push(options.dlqCount / ((performance.now() - started) / 1000));
  }
  return { postgres: { unit: 'envelopes/s', concurrency: 16, perRound: options.dlqCount, rate: spread(rates, 0) } };
}

/**
 * Figure 4: FAILED executions (records inserted directly, as many as needed) re-driven
 * through the real HTTP endpoint on a loopback port, against plain workflow starts of a
 * one-step bare workflow, both at concurrency 16, interleaved per round. Besides the rates,
 * what one admission costs in counts that do not move with load: Postgres statements (the
 * API's own pool counts them), Temporal calls (the client's interceptor), and CPU ms per
 * admission by process for both variants.
 *
 * The load generator is a keep-alive `node:http` client: `fetch` cost this process ~0.3–1 ms
 * of CPU more per request (bench/BENCHMARKS.md), charged to the engine's side. The API has a
 * pool of its own, as large as the concurrency (in a deployment the API and the workers are
 * separate processes): on the worker's pool of 10 an admission waited for a connection.
 */
async function measureRedrive(ctx: Bench, held: boolean): Promise<Record<string, unknown>> {
  const { options } = ctx;
  // Held (4d): every variant's runs start on a task queue no worker polls until its window has
  // ended, so the window holds the admissions alone, not the runs they started executing beside them.
  const queue = held ? `${ctx.taskQueue}-held` : ctx.taskQueue;
  const label = held ? 'rh' : 'rd';
  ctx.say(`re-drive throughput${held ? ', runs held until each window ends' : ''}: ${options.redriveCount} per variant`);
  const concurrency = 16;
  const token = 'bench-admin-token';
  const config = loadConfig({}, { 'pipeline.auth.tokens': [{ sha256: sha256Hex(token), role: 'admin' }] });
  const apiDb = createPgDb(ctx.database.url, { max: concurrency });
  const apiStores = createStores(apiDb);
  const { executions: store, effects } = apiStores;
  const dispatcher = new Dispatcher(apiDb, ctx.client, ctx.registry, queue, ctx.log, CALL_TIMEOUT_MS);
  const redrive = new RedriveService(store, effects, apiStores.definitions, ctx.registry, dispatcher, ctx.client, ctx.log);
  const executions = new ExecutionService(store, apiStores.definitions, ctx.registry, dispatcher, ctx.log);
  const checkpoints = new CheckpointPublisher(apiStores.checkpoints, ctx.registry, executions, dispatcher, ctx.log, {
    concurrency: 8,
    slowMs: 5000,
    intervalMs: 1000,
  });
  const app = createApp({
    config,
    log: ctx.log,
    store,
    effects,
    dlq: apiStores.dlq,
    definitions: apiStores.definitions,
    executions,
    redrive,
    registry: ctx.registry,
    rejects: apiStores.rejects,
    signals: apiStores.signals,
    checkpoints,
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as { port: number }).port;
  // The re-drive's floor: a bare node:http route that makes the least durable admission the
  // contract asks for (one Postgres write guarded by the expected version) and then the raw
  // start. No framework, auth, record read, audit or dispatch row: the admission ÷ floor is
  // what the service adds, floor ÷ raw start what any durable HTTP admission costs here.
  await ctx.database.db.exec(
    `CREATE TABLE IF NOT EXISTS bench_floor_redrive (id text PRIMARY KEY, version int NOT NULL, updated_at timestamptz NOT NULL DEFAULT now())`,
  );
  const floorServer = http.createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', async () => {
      try {
        const id = decodeURIComponent(request.url!.split('/')[2]);
        const { expectedVersion } = JSON.parse(text) as { expectedVersion: number };
        const moved = await apiDb.prepared(
          `UPDATE bench_floor_redrive SET version = version + 1, updated_at = now() WHERE id = $1 AND version = $2 RETURNING version`,
          [id, expectedVersion],
        );
        if (!moved.rowCount) {
          response.writeHead(409).end();
          return;
        }
        await ctx.client.workflow.start('bareWorkflow', { workflowId: `floor-${id}`, taskQueue: queue, args: [1, null, 0] });
        response.writeHead(202).end();
      } catch (err) {
        response.writeHead(500).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => floorServer.listen(0, '127.0.0.1', resolve));
  const floorPort = (floorServer.address() as { port: number }).port;
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const body = JSON.stringify({ expectedVersion: 3, reason: 'benchmark', allowFailed: true });
  const post = (path: string, to = port) =>
    new Promise<void>((resolve, reject) => {
      const request = http.request(
        {
          host: '127.0.0.1',
          port: to,
          path,
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => (response.statusCode === 202 ? resolve() : reject(new Error(`re-drive answered ${response.statusCode}: ${text}`))));
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  const count = options.redriveCount;
  const redriveRates: number[] = [];
  const bareRates: number[] = [];
  const ratios: number[] = [];
  const latencies: number[] = [];
  const bareLatencies: number[] = [];
  const floorRates: number[] = [];
  const floorRatios: number[] = [];
  const floorLatencies: number[] = [];
  type Variant = 'redrive' | 'bare' | 'floor';
  const cpu: Record<Variant, CpuSample[]> = { redrive: [], bare: [], floor: [] };
  const statements: number[] = [];
  const calls: Record<Variant, Record<string, number>> = { redrive: {}, bare: {}, floor: {} };
  const database = databaseName(ctx.database);
  try {
    for (let round = 0; round < options.runs; round++) {
      const prefix = `${label}-${round}-`;
      await ctx.database.db.query(
        `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index,
           attempt, failed_step_index, terminal_reason, segment_input)
         SELECT 'bench', $1 || g, 'noop1', 'pipeline/bench/' || $1 || g, 'FAILED', 3, 1, 0, 1, 0, 'retry_exhausted', '{}'::jsonb
         FROM generate_series(0, $2 - 1) g`,
        [prefix, count],
      );
      await ctx.database.db.query(`INSERT INTO bench_floor_redrive (id, version) SELECT $1 || g, 3 FROM generate_series(0, $2 - 1) g`, [prefix, count]);
      const measure = async (variant: Variant) => {
        const queriesBefore = apiDb.stats.queries;
        const callsBefore = { ...ctx.temporalCalls };
        const cpuBefore = cpuSnapshot(ctx.temporalPid, database);
        const started = performance.now();
        await pool(count, concurrency, async (i) => {
          const t0 = performance.now();
          if (variant === 'redrive') {
            await post(`/pipeline/admin/tenants/bench/executions/${prefix}${i}/redrive`);
            latencies.push(performance.now() - t0);
          } else if (variant === 'floor') {
            await post(`/floor/${prefix}${i}/redrive`, floorPort);
            floorLatencies.push(performance.now() - t0);
          } else {
            await ctx.client.workflow.start('bareWorkflow', { workflowId: `${label}-bare-${round}-${i}`, taskQueue: queue, args: [1, null, 0] });
            bareLatencies.push(performance.now() - t0);
          }
        });
        const rate = count / ((performance.now() - started) / 1000);
        cpu[variant].push(cpuDelta(cpuBefore, cpuSnapshot(ctx.temporalPid, database), count));
        if (variant === 'redrive') statements.push((apiDb.stats.queries - queriesBefore) / count);
        for (const [method, n] of Object.entries(ctx.temporalCalls)) {
          const delta = (n - (callsBefore[method] ?? 0)) / count;
          if (delta > 0) calls[variant][method] = Math.max(calls[variant][method] ?? 0, delta);
        }
        return rate;
      };
      const order = everyOrder(['redrive', 'bare', 'floor'] as const, round);
      const rates: Record<string, number> = {};
      for (const variant of order) {
        rates[variant] = await measure(variant);
        // Each variant's started runs finish before the other variant is measured, so neither pays for the other's runs.
        const quiet = waitForQuiet(ctx.database, ctx.client, queue, `${label}-`);
        await (held ? ctx.drain(queue, quiet) : quiet);
      }
      redriveRates.push(rates.redrive);
      bareRates.push(rates.bare);
      ratios.push(rates.redrive / rates.bare);
      floorRates.push(rates.floor);
      floorRatios.push(rates.floor / rates.bare);
      ctx.say(
        `re-drive${held ? ' (held)' : ''} ${round + 1}/${options.runs}: re-drive ${rates.redrive.toFixed(1)}/s, start ${rates.bare.toFixed(1)}/s, floor ${rates.floor.toFixed(1)}/s, ratio ${(rates.redrive / rates.bare).toFixed(3)} (floor ÷ start ${(rates.floor / rates.bare).toFixed(3)})`,
      );
    }
  } finally {
    agent.destroy();
    await new Promise((resolve) => server.close(resolve));
    await new Promise((resolve) => floorServer.close(resolve));
    await apiDb.close();
  }
  const cpuMedian = (samples: CpuSample[]) => ({
    node: spread(samples.map((c) => c.node)).median,
    temporal: spread(samples.map((c) => c.temporal)).median,
    postgres: spread(samples.map((c) => c.postgres)).median,
  });
  const ms = (values: number[], p: number) => Number(percentile(values, p).toFixed(1));
  return {
    measured: true,
    held,
    unit: 'admissions/s',
    count,
    concurrency,
    redrive: spread(redriveRates),
    bare: spread(bareRates),
    ratio: spread(ratios, 3),
    latencyMs: { p50: ms(latencies, 50), p99: ms(latencies, 99) },
    bareLatencyMs: { p50: ms(bareLatencies, 50), p99: ms(bareLatencies, 99) },
    floor: {
      about: 'a bare node:http route: one Postgres write guarded by the expected version, then the raw start',
      rate: spread(floorRates),
      ratio: spread(floorRatios, 3),
      latencyMs: { p50: ms(floorLatencies, 50), p99: ms(floorLatencies, 99) },
      cpuMs: cpuMedian(cpu.floor),
    },
    perAdmission: {
      postgresStatements: spread(statements, 2).max,
      temporalCalls: calls.redrive,
      bareTemporalCalls: calls.bare,
      cpuMs: {
        redrive: cpuMedian(cpu.redrive),
        bare: cpuMedian(cpu.bare),
        note: "this process (API, load generator and the worker running the started runs), the dev server, the bench database's backends",
      },
    },
    target: '≥ 0.9, p99 ≤ 150 ms',
  };
}

/**
 * Waits until this figure's own runs are done (other runs on a shared server are not ours to
 * wait for, nor to decode). Only records whose executionId starts with `prefix` count: the
 * commit figure leaves two RUNNING records that never end, and counting them made every wait
 * run out its 2 minutes.
 */
async function waitForQuiet(database: TestDatabase, client: Client, taskQueue: string, prefix: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const busy = await database.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM execution_record WHERE status IN ('QUEUED', 'RUNNING') AND starts_with(execution_id, $1)`,
      [prefix],
    );
    let running = 0;
    for await (const _ of client.workflow.list({ query: `ExecutionStatus = "Running" AND TaskQueue = "${taskQueue}"` })) running++;
    if (busy.rows[0].n === 0 && running === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** Executions of each warm-up pipeline the memory worker runs to their end before "idle" is sampled. */
const WARM_UP = 20;

/** What one worker process's RSS did: idle, with N parked in retry backoff, with N more running. */
interface MemoryVariant {
  idle: Spread & { heapUsedMb: number };
  parkedInRetryBackoff: Spread & { heapUsedMb: number };
  parkedPlusRunning: Spread & { heapUsedMb: number };
  mbPer1000Parked: number;
  mbPer1000Running: number;
  /** V8 heap in use after a full collection, per 1,000 parked: the runs' JavaScript state alone */
  heapMbPer1000Parked: number;
}

/**
 * Worker memory per parked and per running execution, for the engine and for bare Temporal in the
 * same run (each in a worker process of its own, with the same worker options): bare is the SDK's
 * own per-run state, so the ratio says what the engine adds to it.
 */
async function measureMemory(ctx: Bench): Promise<Record<string, unknown>> {
  const { options } = ctx;
  // The bound: a tenth of the runs (pipeline.orchestrator.worker.max-cached-workflows; at least 2, the SDK's least).
  const bound = Math.max(2, Math.ceil(options.memoryCount / 10));
  ctx.say(`worker memory with ${options.memoryCount} executions: engine and bare, each with every run cached, then with a cache of ${bound}`);
  const ratio = (engine: MemoryVariant, bare: MemoryVariant) =>
    bare.mbPer1000Parked > 0 ? Number((engine.mbPer1000Parked / bare.mbPer1000Parked).toFixed(2)) : null;
  const engine = await memoryVariant(ctx, 'engine');
  const bare = await memoryVariant(ctx, 'bare');
  const boundedEngine = await memoryVariant(ctx, 'engine', bound);
  const boundedBare = await memoryVariant(ctx, 'bare', bound);
  return {
    unit: 'MB RSS of the worker process, each sample after a full collection',
    count: options.memoryCount,
    warmUpExecutions: 2 * WARM_UP,
    ...engine,
    bare,
    parkedRatio: ratio(engine, bare),
    boundedCache: { maxCachedWorkflows: bound, engine: boundedEngine, bare: boundedBare, parkedRatio: ratio(boundedEngine, boundedBare) },
  };
}

/** One worker process, engine or bare, its workflow cache bounded to `maxCached` when given (else it holds every run). */
async function memoryVariant(ctx: Bench, variant: 'engine' | 'bare', maxCached?: number): Promise<MemoryVariant> {
  const { options } = ctx;
  const tag = randomBytes(4).toString('hex');
  const taskQueue = `bench-mem-${variant}-${tag}`;
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(new URL('./worker-process.ts', import.meta.url))], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: ctx.address,
      // A Temporal of the caller's own: the child connects through the environment's profile as this process does.
      BENCH_TEMPORAL_PROFILE: options.temporalAddress ? '1' : '0',
      DATABASE_URL: ctx.database.url,
      TASK_QUEUE: taskQueue,
      ACTIVITY_SLOTS: String(options.memoryCount + 50),
      BARE: variant === 'bare' ? '1' : '0',
      ...(maxCached ? { MAX_CACHED_WORKFLOWS: String(maxCached) } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Pending starts of this figure belong on the memory worker's queue: its own sweeper meanwhile.
  await ctx.sweeper.stop();
  const memSweeper = sweeperFor(ctx.database.url, ctx.client, ctx.registry, taskQueue, ctx.log);
  const started: string[] = [];
  try {
    let out = '';
    child.stdout!.on('data', (chunk) => (out += chunk));
    while (!out.includes('ready')) {
      if (child.exitCode !== null) throw new Error(`memory worker (${variant}) exited`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Same store and registry, but runs go to the memory worker's own task queue.
    const memExecutions = new ExecutionService(
      ctx.store,
      ctx.stores.definitions,
      ctx.registry,
      new Dispatcher(ctx.store.db, ctx.client, ctx.registry, taskQueue, ctx.log, CALL_TIMEOUT_MS),
      ctx.log,
    );
    /** A full collection in the worker first: the figure is memory the runs hold, not garbage V8 has not collected yet. */
    const collect = async (): Promise<number> => {
      const answers = () => [...out.matchAll(/^gc (\S+)\n/gm)];
      const answered = answers().length;
      child.kill('SIGUSR2');
      const deadline = Date.now() + 30_000;
      while (answers().length === answered) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`memory worker (${variant}) did not answer its collection`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return Number(answers().at(-1)![1]);
    };
    /** RSS after a full collection, and V8's heap in use then (the runs' JavaScript state). */
    const sample = async () => {
      const values: number[] = [];
      const heap: number[] = [];
      for (let i = 0; i < (options.memorySamples ?? Math.max(5, options.runs)); i++) {
        heap.push(await collect());
        values.push(rssMb(child.pid!));
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      return { ...spread(values, 1), heapUsedMb: spread(heap, 1).median };
    };
    /** Engine: waits until `count` executions whose id starts with `prefix` meet `condition` (SQL on the record). */
    const waitUntil = async (prefix: string, condition: string, count: number) => {
      const deadline = Date.now() + 300_000;
      for (;;) {
        const result = await ctx.store.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM execution_record WHERE execution_id LIKE $1 AND ${condition}`, [
          `${prefix}-%`,
        ]);
        if (result.rows[0].n >= count) return;
        if (Date.now() > deadline) {
          // Say where the others are, so a run that stops here can be read without a rerun.
          const where = await ctx.store.db.query<{ status: string; attempt: number; dispatch: string | null; n: number }>(
            `SELECT r.status, r.attempt, d.status AS dispatch, count(*)::int AS n
               FROM execution_record r LEFT JOIN execution_dispatch d USING (tenant_id, execution_id)
              WHERE r.execution_id LIKE $1 GROUP BY 1, 2, 3 ORDER BY 4 DESC`,
            [`${prefix}-%`],
          );
          const states = where.rows.map((row) => `${row.n} ${row.status} attempt ${row.attempt} dispatch ${row.dispatch ?? 'none'}`).join('; ');
          throw new Error(`memory benchmark: only ${result.rows[0].n}/${count} ${prefix}-* executions reached ${condition} (${states})`);
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    /** Bare: waits until each workflow's one activity is where `reached` says (read by describe, once per run that got there). */
    const waitEach = async (ids: string[], what: string, reached: (activity: { attempt?: number | null; state?: number | null } | undefined) => boolean) => {
      const deadline = Date.now() + 300_000;
      let left = ids;
      while (left.length > 0) {
        const still: string[] = [];
        await pool(left.length, 16, async (i) => {
          const description = await ctx.client.workflow.getHandle(left[i]).describe();
          if (!reached(description.raw.pendingActivities?.[0] ?? undefined)) still.push(left[i]);
        });
        left = still;
        if (left.length === 0) return;
        if (Date.now() > deadline) throw new Error(`memory benchmark (bare): ${left.length}/${ids.length} runs not ${what} after 300 s`);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    const startBare = async (workflow: string, prefix: string, count: number, concurrency: number) => {
      const ids = Array.from({ length: count }, (_, i) => `${prefix}-${taskQueue}-${i}`);
      started.push(...ids);
      await pool(count, concurrency, async (i) => {
        await ctx.client.workflow.start(workflow, { workflowId: ids[i], taskQueue, args: [null] });
      });
      return ids;
    };
    const STARTED = 2; // PENDING_ACTIVITY_STATE_STARTED

    // Warm the worker first (its workflow thread and bundle, the activity and failure paths, its
    // Postgres connections): "idle" is a worker that has run executions and holds none, so the
    // deltas below are per execution, not the first execution's one-off costs spread over N.
    if (variant === 'engine') {
      await pool(WARM_UP, 8, async (i) => {
        await memExecutions.start(TENANT, { pipeline: 'noop1', executionId: `warm-${tag}-${i}` });
        await memExecutions.start(TENANT, { pipeline: 'retry1', executionId: `warm-${tag}-retry-${i}`, input: { failTimes: 1 } });
      });
      await waitUntil(`warm-${tag}`, `status = 'SUCCEEDED'`, 2 * WARM_UP);
    } else {
      const warm = await startBare('bareWarmWorkflow', 'bare-warm', 2 * WARM_UP, 8);
      await Promise.all(warm.map((id) => ctx.client.workflow.getHandle(id).result()));
    }
    const idle = await sample();
    const label = `${variant}${maxCached ? `, cache ${maxCached}` : ''}`;
    ctx.say(`memory (${label}): idle ${idle.median} MB (after ${2 * WARM_UP} warm-up executions); parking ${options.memoryCount}`);
    if (variant === 'engine') {
      // Their runs are terminated at the end whatever happens (the bare ones are listed as they start).
      for (const prefix of ['park', 'sleepy']) {
        for (let i = 0; i < options.memoryCount; i++) started.push(workflowIdFor(TENANT, `${prefix}-${tag}-${i}`));
      }
      await pool(options.memoryCount, 32, async (i) => {
        await memExecutions.start(TENANT, { pipeline: 'park', executionId: `park-${tag}-${i}` });
      });
      await waitUntil(`park-${tag}`, 'attempt >= 2', options.memoryCount);
    } else {
      const parked = await startBare('bareParkWorkflow', 'bare-park', options.memoryCount, 32);
      await waitEach(parked, 'parked in retry backoff', (activity) => (activity?.attempt ?? 0) >= 2);
    }
    const parked = await sample();
    ctx.say(`memory (${label}): parked ${parked.median} MB; starting ${options.memoryCount} running`);
    if (variant === 'engine') {
      await pool(options.memoryCount, 32, async (i) => {
        await memExecutions.start(TENANT, { pipeline: 'sleepy', executionId: `sleepy-${tag}-${i}` });
      });
      await waitUntil(`sleepy-${tag}`, `status = 'RUNNING'`, options.memoryCount);
    } else {
      const running = await startBare('bareSleepyWorkflow', 'bare-sleepy', options.memoryCount, 32);
      await waitEach(running, 'running their activity', (activity) => activity?.state === STARTED);
    }
    const running = await sample();
    const per1000 = (delta: number) => Number(((delta * 1000) / options.memoryCount).toFixed(1));
    return {
      idle,
      parkedInRetryBackoff: parked,
      parkedPlusRunning: running,
      mbPer1000Parked: per1000(parked.median - idle.median),
      mbPer1000Running: per1000(running.median - parked.median),
      heapMbPer1000Parked: per1000(parked.heapUsedMb - idle.heapUsedMb),
    };
  } finally {
    await pool(started.length, 32, async (i) => {
      await ctx.client.workflow
        .getHandle(started[i])
        .terminate('benchmark over')
        .catch(() => undefined);
    });
    await memSweeper.close();
    ctx.sweeper.start();
    child.kill('SIGKILL');
  }
}

export type { Spread };
