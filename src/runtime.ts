/**
 * Composition: builds the store, Temporal client and worker, dispatcher and sweeper, and
 * the HTTP API from a Config, with the embedded default (Temporal dev server child
 * process + PGlite under the data dir) when no Temporal address or database URL is set.
 */
import { randomBytes } from 'node:crypto';
import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { ServerType } from '@hono/node-server';
import { Client } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createApp } from './api/app';
import { createHealthApp, createStartingApp } from './api/health';
import { sha256Hex } from './hash';
import { bulkRunTaskQueue, type Config, type Role } from './config/config';
import { lockDataDir } from './service/data-dir-lock';
import { ConfigError, errorLine } from './errors';
import type { Log } from './log';
import type { PipelineDefinition } from './pipeline/define';
import { PipelineRegistry } from './pipeline/registry';
import { createPgDb, createPgliteDb, explainStoreFailure, storeConnectionString, type Db } from './store/db';
import { checkDefinitionShapes } from './service/definition-check';
import { createDlqProvider } from './dlq/factory';
import { DlqRelay } from './dlq/relay';
import { Metrics } from './metrics';
import { PeriodicTask } from './periodic-task';
import { boundPort, requireFreePorts, serveHttp } from './net';
import { migrate } from './store/migrate';
import { createStores } from './store/stores';
import type { ExecutionStore } from './store/execution-store';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AesGcmCodec } from './temporal/codec';
import { ForkService } from './repair/fork';
import { startTracing } from './tracing';
import { connectClient, registerSearchAttributes, temporalConnectOptions, type TemporalConnectOptions } from './temporal/connection';
import { connectWaiting } from './temporal/connect-wait';
import { startDevServer, type DevServer } from './temporal/dev-server';
import { Dispatcher } from './temporal/dispatcher';
import { TaskQueuePollers } from './temporal/task-queue-pollers';
import { installSdkLogging } from './temporal/sdk-logging';
import { createEngineWorker, workflowCacheOptions } from './temporal/worker';
import { CheckpointPublisher } from './service/checkpoints';
import { ExecutionService } from './service/executions';
import { HistoryService } from './service/history';
import { Readiness } from './service/readiness';
import { RedriveService } from './service/redrive';
import { RedriveJobs } from './service/redrive-jobs';
import { RedriveJobTicks } from './service/redrive-job-ticks';
import { RedriveJobWatch } from './service/redrive-job-watch';
import { RunEndWatch } from './service/run-end-watch';
import { createRunEnder } from './activities/engine-activities';
import { Retention, retentionPolicy } from './service/retention';

export interface ServiceOptions {
  config: Config;
  log: Log;
  pipelines: PipelineDefinition[];
  /** run the worker in this process (default: by `pipeline.role`, all and worker) */
  worker?: boolean;
  /** serve HTTP (default true; the worker role serves only /healthz, /readyz, /metrics) */
  http?: boolean;
  /** trace spans to this processor (tests); otherwise `pipeline.tracing.otlp-endpoint` decides */
  spanProcessor?: SpanProcessor;
  /** where the Temporal client profile (TEMPORAL_*, TOML) is read from; default process.env */
  env?: Record<string, string | undefined>;
}

export interface Service {
  config: Config;
  db: Db;
  client: Client;
  registry: PipelineRegistry;
  store: ExecutionStore;
  dispatcher: Dispatcher;
  /** bulk re-drive jobs, the API side (create, dry run, control, list, the start sweeper); the activities use RedriveJobTicks */
  jobs: RedriveJobs;
  app: ReturnType<typeof createApp>;
  metrics: Metrics;
  checkpoints: CheckpointPublisher;
  /** the broker DLQ relay, when the provider is sqs or rabbitmq */
  relay?: DlqRelay;
  role: Role;
  readiness: Readiness;
  /** deletes rows past their retention, in the worker process */
  retention: Retention;
  urls: { api?: string; temporalUi?: string; temporal: string };
  /** the ports this process listens on (for a configured 0, the one it got) */
  ports: { http?: number; temporal?: number; temporalUi?: number };
  adminToken?: string;
  stop(): Promise<void>;
}

/** The embedded default's admin token: made once, kept in <data-dir>/admin-token (0600). */
function embeddedAdminToken(dataDir: string): string {
  const file = join(dataDir, 'admin-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const token = randomBytes(24).toString('base64url');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return token;
}

export async function startService(options: ServiceOptions): Promise<Service> {
  const stack: (() => Promise<unknown>)[] = [];
  try {
    return await build(options, stack);
  } catch (err) {
    // Start-up failed part way: undo what was started (the dev server child above all).
    for (const undo of stack.reverse()) await undo().catch(() => undefined);
    throw err;
  }
}

/**
 * The start-up errors the configuration alone shows (a split role on the embedded default, a
 * workflow bundle that cannot be read), thrown as a ConfigError naming the key. Checked before
 * any port is bound or process started (`src/service-main.ts` calls it before the demo's
 * workers listen), so a bad key is named even when a port is taken too.
 */
export function assertStartable(config: Config, worker = config['pipeline.role'] !== 'api'): void {
  const role = config['pipeline.role'];
  if (isEmbedded(config) && role !== 'all') {
    throw new ConfigError(
      `pipeline.role=${role} needs the shared Postgres (pipeline.store.url, DATABASE_URL) and Temporal (pipeline.temporal.address, TEMPORAL_ADDRESS or a temporal CLI profile): split roles cannot share an embedded default`,
    );
  }
  const workflowBundle = config['pipeline.orchestrator.worker.workflow-bundle'];
  if (workflowBundle !== undefined && worker) {
    try {
      accessSync(workflowBundle, constants.R_OK);
    } catch (err) {
      throw new ConfigError(
        `pipeline.orchestrator.worker.workflow-bundle: cannot read ${workflowBundle} (${(err as NodeJS.ErrnoException).code ?? 'error'}); build it with npm run bundle:workflows or unset the key`,
      );
    }
  }
}

/** Whether the configuration runs on the embedded default (no shared Postgres or no Temporal address). */
export const isEmbedded = (config: Config) => !config['pipeline.store.url'] || !config['pipeline.temporal.address'];

async function build(options: ServiceOptions, stack: (() => Promise<unknown>)[]): Promise<Service> {
  const { config, log } = options;
  installSdkLogging(log);
  const dataDir = resolve(config['pipeline.data-dir']);
  const embedded = isEmbedded(config);
  const role = config['pipeline.role'];
  assertStartable(config, options.worker ?? role !== 'api');
  const workflowBundle = config['pipeline.orchestrator.worker.workflow-bundle'];

  // The data dir first: a second service on it would otherwise report port clashes one by one
  // before naming the real cause (the running service's pid).
  let releaseDataDir: (() => void) | undefined;
  if (embedded) {
    mkdirSync(dataDir, { recursive: true });
    const release = lockDataDir(dataDir);
    releaseDataDir = release;
    stack.push(async () => release());
  }
  // Every port clash is a start-up error naming its key, found before anything starts.
  await requireFreePorts([
    ...(options.http !== false ? [{ key: 'pipeline.server.port', port: config['pipeline.server.port'], host: config['pipeline.server.host'] }] : []),
    ...(config['pipeline.temporal.address']
      ? []
      : [
          {
            key: 'pipeline.temporal.dev-server.port',
            port: config['pipeline.temporal.dev-server.port'],
            hint: 'another Temporal server? the embedded default never adopts a server it did not start; to use that one, set pipeline.temporal.address',
          },
          { key: 'pipeline.temporal.dev-server.ui-port', port: config['pipeline.temporal.dev-server.ui-port'] },
        ]),
  ]);
  // HTTP answers from here on: /healthz 200, /readyz 503 naming what start-up waits for (a
  // Temporal that is not up yet), everything else 503; the full app takes over once started.
  let starting = 'opening the store';
  let current: (request: Request, env?: unknown) => Response | Promise<Response> = createStartingApp(() => starting).fetch;
  let server: ServerType | undefined;
  if (options.http !== false) {
    const listening = await serveHttp({
      fetch: (request, env) => current(request, env),
      port: config['pipeline.server.port'],
      hostname: config['pipeline.server.host'],
      key: 'pipeline.server.port',
      timeouts: { headersMs: config['pipeline.server.headers-timeout'], requestMs: config['pipeline.server.request-timeout'] },
    });
    server = listening;
    stack.push(() => drainHttp(listening, 0));
  }
  if (config['pipeline.defaults.retry-wait-ms'] < 1000) {
    // Temporal never retries an activity sooner than about 1 s: a smaller base is not honoured.
    log.warn({
      event: 'config_warning',
      key: 'pipeline.defaults.retry-wait-ms',
      value: config['pipeline.defaults.retry-wait-ms'],
      detail: 'Temporal retries an activity no sooner than about 1000 ms after a failure; delays below that behave as about 1000 ms',
    });
  }

  let tokens = config['pipeline.auth.tokens'];
  let adminToken: string | undefined;
  if (tokens.length === 0 && role !== 'worker') {
    if (!embedded) throw new ConfigError('pipeline.auth.tokens is empty: configure at least one admin token hash (there is no "auth disabled" mode)');
    adminToken = embeddedAdminToken(dataDir);
    tokens = [{ sha256: sha256Hex(adminToken), role: 'admin', name: 'embedded-admin' }];
  }
  const effective: Config = { ...config, 'pipeline.auth.tokens': tokens };

  const storeUrl = config['pipeline.store.url'] ? storeConnectionString(config['pipeline.store.url'], config['pipeline.store.ca-file']) : undefined;
  // The store's pool and the jobs' pool differ only in size.
  const poolSettings = {
    acquireTimeoutMs: config['pipeline.store.acquire-timeout'],
    idleTimeoutMs: config['pipeline.store.idle-timeout'],
    preparedStatements: config['pipeline.store.prepared-statements'],
    log,
  };
  const db = storeUrl ? createPgDb(storeUrl, { max: config['pipeline.store.pool-size'], ...poolSettings }) : await createPgliteDb(join(dataDir, 'pglite'));
  stack.push(() => db.close());
  await migrate(db, log).catch((err) => {
    throw config['pipeline.store.url'] ? explainStoreFailure(err, config['pipeline.store.url'], config['pipeline.store.ca-file']) : err;
  });
  // Before anything runs a step: a definition changed under its version with executions pinned to the old shape stops here.
  const registry = new PipelineRegistry(effective, options.pipelines);
  const stores = createStores(db);
  await checkDefinitionShapes(registry, stores.definitions, log);

  let devServer: DevServer | undefined;
  let address = config['pipeline.temporal.address'];
  const namespace = config['pipeline.temporal.namespace'];
  if (!address) {
    starting = 'starting the embedded Temporal dev server';
    devServer = await startDevServer({
      dbFilename: join(dataDir, 'temporal.db'),
      port: config['pipeline.temporal.dev-server.port'],
      uiPort: config['pipeline.temporal.dev-server.ui-port'],
      namespace,
      log,
    });
    address = devServer.address;
    log.info({
      event: 'temporal_dev_server_started',
      address,
      port: devServer.port,
      uiPort: devServer.uiPort ?? null,
      pid: devServer.pid ?? null,
      watchdogPid: devServer.watchdogPid ?? null,
    });
    const started = devServer;
    stack.push(() => started.stop());
  }
  const connectOptions: TemporalConnectOptions = devServer ? { address } : temporalConnectOptions(address, options.env ?? process.env);
  starting = `connecting to Temporal at ${address}`;
  const temporalAddress = address;
  const connection = devServer
    ? await connectClient(connectOptions)
    : await connectWaiting({
        address,
        namespace,
        waitMs: config['pipeline.temporal.connect-wait'],
        connect: () => connectClient(connectOptions),
        log,
        onWaiting: ({ attempt, error, nextInMs }) => {
          starting = `waiting for Temporal at ${temporalAddress} (namespace ${namespace}; attempt ${attempt} failed: ${error}; next in ${Math.ceil(nextInMs / 1000)} s, up to pipeline.temporal.connect-wait)`;
        },
      });
  starting = 'starting the worker';
  stack.push(() => connection.close());
  if (!devServer) await registerSearchAttributes(connection, namespace, log);
  // Opt-in payload encryption: the client and the worker seal what they send to Temporal.
  const codec = config['pipeline.codec.keys'].length > 0 ? new AesGcmCodec(config['pipeline.codec.keys']) : undefined;
  const dataConverter = codec ? { payloadCodecs: [codec] } : undefined;
  const tracing = startTracing({ endpoint: config['pipeline.tracing.otlp-endpoint'], spanProcessor: options.spanProcessor });
  if (tracing) stack.push(() => tracing.shutdown());
  const client = new Client({ connection, namespace, dataConverter, interceptors: tracing?.client });

  const { executions: store, effects, dlq, definitions, signals } = stores;
  const taskQueue = config['pipeline.temporal.task-queue'];
  // A bulk job's runs: behind live work in Temporal's queue, and on a task queue of their own when one is configured.
  const jobRuns = { priorityKey: config['pipeline.redrive-job.priority'], taskQueue: bulkRunTaskQueue(config) };
  const runQueues = [...new Set([taskQueue, jobRuns.taskQueue])];
  const dispatcher = new Dispatcher(db, client, registry, taskQueue, log, config['pipeline.temporal.call-timeout'], jobRuns);
  const dlqProvider = createDlqProvider(config, log);
  const relay = dlqProvider ? new DlqRelay(dlq, dlqProvider, log) : undefined;
  if (dlqProvider) stack.push(() => dlqProvider.close());
  const metrics = new Metrics(signals, config['pipeline.defaults.retry-limit'], dlqProvider ? () => dlqProvider.backlog() : undefined);
  const executions = new ExecutionService(store, definitions, registry, dispatcher, log, metrics);
  const retention = new Retention(db, retentionPolicy(config), log, metrics, config['pipeline.retention.interval']);
  const redrive = new RedriveService(store, effects, definitions, registry, dispatcher, client, log, metrics, codec);
  const jobTaskQueue = config['pipeline.redrive-job.task-queue'] ?? `${taskQueue}-redrive-jobs`;
  const pollers = new TaskQueuePollers(client, config['pipeline.temporal.call-timeout']);
  const jobs = new RedriveJobs(stores.jobs, redrive, client, jobTaskQueue, log, config['pipeline.temporal.call-timeout'], {
    pollers,
    runTaskQueue: jobRuns.taskQueue,
  });
  // Starts the bulk re-drive jobs whose start was lost, on the execution sweeper's interval; every tenth
  // interval it also fails the jobs whose workflow was terminated in Temporal (service/redrive-job-watch.ts).
  const jobWatch = new RedriveJobWatch(
    stores.jobs,
    client,
    new RedriveJobTicks(stores.jobs, redrive, log, undefined, undefined, config['pipeline.redrive-job.yield-to-live']),
    log,
    config['pipeline.sweeper.interval'] * 10,
    config['pipeline.temporal.call-timeout'],
  );
  // Every tenth interval too: a pipeline run Temporal closed without the engine (Terminate, Request
  // Cancellation, a run timeout) ends its record FAILED, to the DLQ (service/run-end-watch.ts).
  const runWatch = new RunEndWatch(client, runQueues, store, createRunEnder({ store, effects, registry, log, metrics, definitions }), log, {
    everyMs: config['pipeline.sweeper.interval'] * 10,
    graceMs: config['pipeline.orchestrator.worker.heartbeat-timeout'],
    callTimeoutMs: config['pipeline.temporal.call-timeout'],
  });
  const runWatchTask = new PeriodicTask('execution_run_watch_failed', config['pipeline.sweeper.interval'], () => runWatch.sweepOnce(), log);
  const jobSweeper = new PeriodicTask(
    'redrive_job_sweep_failed',
    config['pipeline.sweeper.interval'],
    async () => {
      await jobs.sweepOnce();
      await jobWatch.sweepOnce();
    },
    log,
  );
  const checkpoints = new CheckpointPublisher(
    stores.checkpoints,
    registry,
    executions,
    dispatcher,
    log,
    {
      concurrency: config['pipeline.checkpoint.concurrency'],
      slowMs: config['pipeline.checkpoint.slow-admission'],
      intervalMs: config['pipeline.checkpoint.interval'],
    },
    metrics,
  );
  let worker: Worker | undefined;
  let jobWorker: Worker | undefined;
  let bulkWorker: Worker | undefined;
  let jobDb: Db | undefined;
  const runWorker = options.worker ?? role !== 'api';
  const readiness = new Readiness({ db, client, worker: runWorker ? () => worker : undefined, timeoutMs: config['pipeline.temporal.call-timeout'] });
  const app = createApp({
    config: effective,
    log,
    store,
    effects,
    dlq,
    definitions,
    executions,
    redrive,
    forks: new ForkService(store, stores.history, definitions, registry, dispatcher, client, log, codec),
    history: stores.history,
    registry,
    rejects: stores.rejects,
    signals,
    metrics,
    checkpoints,
    readiness,
    codec,
    tracing: tracing !== undefined,
    fleet: { groups: stores.groups, history: new HistoryService(store, stores.history, definitions, registry), jobs },
  });

  let workerDone: Promise<void> | undefined;
  let stopping = false;
  const grace = config['pipeline.shutdown.grace-period'];
  if (runWorker) {
    // Bulk jobs admit through their own small pool (the same checks, the same store), so a
    // job's admissions never wait for, nor hold, the connections live traffic needs.
    const jobPoolSize = config['pipeline.redrive-job.pool-size'];
    const ownJobDb = storeUrl ? createPgDb(storeUrl, { max: jobPoolSize, ...poolSettings }) : undefined;
    if (ownJobDb) stack.push(() => ownJobDb.close());
    jobDb = ownJobDb;
    const jobStore = ownJobDb ?? db;
    const jobStores = ownJobDb ? createStores(ownJobDb) : stores;
    const jobRedrive = new RedriveService(
      jobStores.executions,
      jobStores.effects,
      jobStores.definitions,
      registry,
      new Dispatcher(jobStore, client, registry, taskQueue, log, config['pipeline.temporal.call-timeout'], jobRuns),
      client,
      log,
      metrics,
    );
    // Which runs this process executes (pipeline.orchestrator.worker.runs): the live queue, the bulk jobs' runs' queue, or both.
    const runsHere = config['pipeline.orchestrator.worker.runs'];
    const created = await createEngineWorker({
      address,
      connect: connectOptions,
      namespace,
      taskQueue: runsHere === 'bulk' ? jobRuns.taskQueue : taskQueue,
      bulkTaskQueue: runsHere === 'all' && jobRuns.taskQueue !== taskQueue ? jobRuns.taskQueue : undefined,
      deps: { store, effects, registry, log, metrics, definitions, inProgressBudgetMs: config['pipeline.orchestrator.worker.in-progress-budget'] },
      jobs: {
        ticks: new RedriveJobTicks(jobStores.jobs, jobRedrive, log, metrics, storeUrl ? jobPoolSize * 2 : 1, config['pipeline.redrive-job.yield-to-live']),
        taskQueue: jobTaskQueue,
      },
      // On shutdown, running activities get this long to finish or heartbeat out before they are cancelled.
      // An activity that ignores its cancellation must not hold the process: past as long again
      // (at most 10 s more), the worker gives up on it (Temporal redelivers it elsewhere).
      worker: {
        shutdownGraceTime: grace,
        shutdownForceTime: grace + Math.min(grace, 10_000),
        dataConverter,
        ...workflowCacheOptions(config['pipeline.orchestrator.worker.max-cached-workflows']),
        ...(workflowBundle && !tracing ? { workflowBundle: { codePath: workflowBundle } } : {}),
        ...tracing?.worker,
      },
    });
    worker = created.worker;
    jobWorker = created.jobWorker;
    bulkWorker = created.bulkWorker;
    const workers = [worker, ...(bulkWorker ? [bulkWorker] : []), ...(jobWorker ? [jobWorker] : [])];
    metrics.observeWorkflowCache(() => workers.map((w) => ({ taskQueue: w.options.taskQueue, cached: w.getStatus().numCachedWorkflows })));
    const runs = workers.map((w) =>
      w.run().catch((err) => {
        if (!stopping) throw err;
        log.warn({ event: 'worker_shutdown_forced', error: errorLine(err) });
      }),
    );
    // One worker failing stops the other too: the process serves both queues or neither.
    for (const run of runs)
      run.catch(() => {
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      });
    workerDone = Promise.allSettled(runs)
      .then((settled) => {
        const failed = settled.find((s) => s.status === 'rejected');
        if (failed) throw failed.reason;
      })
      .finally(() => created.connection.close());
    dispatcher.startSweeper(config['pipeline.sweeper.interval']);
    jobSweeper.start();
    runWatchTask.start();
    checkpoints.start();
    relay?.start();
    retention.start();
    // Undone if a later start-up step fails (the HTTP server cannot listen after all): else the worker and the loops outlive the failed start.
    const started = { workers, workerDone };
    stack.push(async () => {
      await Promise.all([dispatcher.stopSweeper(), jobSweeper.stop(), runWatchTask.stop(), checkpoints.stop(), relay?.stop(), retention.stop()]);
      for (const w of started.workers) if (w.getState() === 'RUNNING') w.shutdown();
      await started.workerDone;
    });
  }

  const urls: Service['urls'] = { temporal: address, temporalUi: devServer?.uiPort ? `http://localhost:${devServer.uiPort}` : undefined };
  const ports: Service['ports'] = { temporal: devServer?.port, temporalUi: devServer?.uiPort, http: server ? boundPort(server) : undefined };
  if (options.http !== false) {
    const hostname = config['pipeline.server.host'];
    const served = role === 'worker' ? createHealthApp({ log, metrics, readiness, metricsTokenSha256: config['pipeline.metrics.token-sha256'] }) : app;
    current = served.fetch;
    const port = ports.http;
    const shown = ['127.0.0.1', '0.0.0.0', '::'].includes(hostname) ? 'localhost' : hostname.includes(':') ? `[${hostname}]` : hostname;
    if (role !== 'worker') urls.api = `http://${shown}:${port}/${config['pipeline.admin.prefix']}`;
  }

  return {
    config: effective,
    db,
    client,
    registry,
    store,
    dispatcher,
    jobs,
    app,
    metrics,
    checkpoints,
    relay,
    retention,
    urls,
    ports,
    adminToken,
    role,
    readiness,
    async stop() {
      // Graceful: not ready from now on; in-flight requests and running activities get the
      // grace period to finish, while nothing new is accepted or polled.
      readiness.markStopping();
      stopping = true;
      // Our own dev server's complaints while the worker and the connection go are expected.
      devServer?.expectStop?.();
      for (const w of [worker, bulkWorker, jobWorker]) if (w?.getState() === 'RUNNING') w.shutdown();
      await Promise.all([
        drainHttp(server, grace),
        (async () => {
          await dispatcher.stopSweeper();
          await jobSweeper.stop();
          await runWatchTask.stop();
          await checkpoints.stop();
          await relay?.stop();
          await retention.stop();
          await dlqProvider?.close();
        })(),
        workerDone,
      ]);
      // A job's read may have left a DescribeTaskQueue out (it waits at most 300 ms for it): it ends by its deadline.
      await pollers.settled();
      await connection.close();
      await devServer?.stop();
      await db.close();
      await jobDb?.close();
      await tracing?.shutdown();
      releaseDataDir?.();
    },
  };
}

/** Stops accepting connections and waits for in-flight requests, cutting what is left after `graceMs`. */
async function drainHttp(server: ServerType | undefined, graceMs: number): Promise<void> {
  if (!server) return;
  const closed = new Promise<void>((done) => server.close(() => done()));
  const timer = setTimeout(() => {
    if ('closeAllConnections' in server) server.closeAllConnections();
  }, graceMs);
  try {
    await closed;
  } finally {
    clearTimeout(timer);
  }
}
