/**
 * An engine per test file: a fresh database, the shared dev server, a unique task
 * queue, and the real service composition (worker, dispatcher, API) with HTTP served
 * in-process through `app.request`. Logs are captured as parsed JSON lines.
 *
 * The dev server and its namespace are shared by every file of a run, and a run's workflow id
 * is `pipeline/<tenant>/<executionId>`: two files that start the same (tenant, executionId) meet
 * on one workflow id (a start may adopt the other file's open run, and a list by workflow id
 * sees both). So each file uses a tenant or execution ids of its own, and a list of runs filters
 * by `TaskQueue = engine.taskQueue`.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { sha256Hex } from '../../src/api/middleware/bearer-auth';
import { loadConfig, type ConfigInput } from '../../src/config/config';
import { workflowIdFor } from '../../src/ids';
import { createLog, type Log } from '../../src/log';
import { RedriveService } from '../../src/service/redrive';
import type { Db } from '../../src/store/db';
import { createStores } from '../../src/store/stores';
import type { PipelineDefinition } from '../../src/pipeline/define';
import { startService, type Service } from '../../src/runtime';
import { DlqStore } from '../../src/store/dlq-store';
import { EffectStore } from '../../src/store/effect-store';
import type { ExecutionRecord, ExecutionStatus } from '../../src/store/execution-store';
import { documentChecker, type DocumentChecker } from './document-conformance';
import { createTestDatabase, type TestDatabase } from './postgres';
import { scaled } from './time-scale';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

export const ADMIN_TOKEN = 'test-admin-token';
export const TENANT_A_TOKEN = 'test-tenant-a-token';
export const SUBMIT_TOKEN = 'test-submit-token';

export const TEST_TOKENS = [
  { sha256: sha256Hex(ADMIN_TOKEN), role: 'admin' as const, name: 'test-admin' },
  { sha256: sha256Hex(TENANT_A_TOKEN), role: 'admin' as const, tenants: ['tenant-a'], name: 'tenant-a-admin' },
  { sha256: sha256Hex(SUBMIT_TOKEN), role: 'submit' as const, name: 'submitter' },
];

export interface TestEngine {
  service: Service;
  database: TestDatabase;
  effects: EffectStore;
  dlq: DlqStore;
  logs: Record<string, any>[];
  taskQueue: string;
  request(method: string, path: string, options?: { body?: unknown; token?: string | null; headers?: Record<string, string> }): Promise<Response>;
  start(tenantId: string, body: Record<string, unknown>): Promise<Record<string, any>>;
  waitFor(tenantId: string, executionId: string, statuses: ExecutionStatus[], timeoutMs?: number): Promise<ExecutionRecord>;
  /** Temporal runs of the execution's workflowId, oldest first, once at least `atLeast` exist and none is RUNNING (visibility is asynchronous). */
  runsOf(tenantId: string, executionId: string, atLeast?: number): Promise<{ runId: string; status: string }[]>;
  stop(): Promise<void>;
}

/**
 * Fast retries for tests: the formula is the same, the base is small. The heartbeat timeout
 * stretches with the machine's load: the step heartbeats every third of it, and a heartbeat
 * late past it (a busy event loop) would time the attempt out and deliver the step again.
 */
export const FAST_RETRY: ConfigInput = {
  'pipeline.defaults.retry-wait-ms': 50,
  'pipeline.defaults.max-backoff': 200,
  'pipeline.orchestrator.worker.heartbeat-timeout': scaled(5000),
};

export async function startTestEngine(
  pipelines: PipelineDefinition[],
  overrides: ConfigInput = {},
  options: {
    worker?: boolean;
    /** serve HTTP on pipeline.server.host/port too (default: in-process only) */ http?: boolean;
    databaseSettings?: Record<string, string>;
    /** the URL the service uses for the fresh database (e.g. through a proxy) */ storeUrl?: (databaseUrl: string) => string;
    /** trace to this span processor (tracing on) */ spanProcessor?: SpanProcessor;
  } = {},
): Promise<TestEngine> {
  const database = await createTestDatabase(options.databaseSettings);
  const taskQueue = `test-${randomBytes(5).toString('hex')}`;
  const logs: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const log = createLog({ level: 'debug', destination: sink });
  const config = loadConfig(
    {},
    {
      'pipeline.store.url': options.storeUrl ? options.storeUrl(database.url) : database.url,
      'pipeline.temporal.address': inject('temporalAddress'),
      'pipeline.temporal.task-queue': taskQueue,
      'pipeline.auth.tokens': TEST_TOKENS,
      'pipeline.sweeper.interval': '500ms',
      'pipeline.orchestrator.worker.workflow-bundle': inject('workflowBundlePath'),
      // Loaded CI machines can take longer than the 5 s default to answer a start; a start past the
      // deadline stays pending for the sweeper, which an engine without a worker does not run.
      // Tests of the deadline itself set their own.
      'pipeline.temporal.call-timeout': '30s',
      // A burst's connections go back to the server within a second (see helpers/postgres.ts).
      'pipeline.store.idle-timeout': '1s',
      ...FAST_RETRY,
      ...overrides,
    },
  );
  const service = await startService({
    config,
    log,
    pipelines,
    http: options.http ?? false,
    worker: options.worker,
    spanProcessor: options.spanProcessor,
  });
  const prefix = `/${config['pipeline.admin.prefix']}`;

  // Every answer a test receives must be one the served document states (status and body), so a
  // handler cannot drift from its declaration unseen. A test that means to receive an undocumented
  // answer has none to receive: the check throws, naming the route, the status and the mismatch.
  let checker: DocumentChecker | undefined;
  const conformingAnswer = async (method: string, path: string, res: Response): Promise<Response> => {
    checker ??= documentChecker(await (await service.app.request(`${prefix}/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json());
    const mismatch = checker.mismatch(method, path, res.status, res.headers.get('content-type'), await res.clone().text());
    if (mismatch) throw new Error(`an answer the OpenAPI document does not state: ${mismatch}`);
    return res;
  };

  const engine: TestEngine = {
    service,
    database,
    effects: new EffectStore(service.db),
    dlq: new DlqStore(service.db),
    logs,
    taskQueue,
    async request(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token !== null) headers.authorization ??= `Bearer ${options.token ?? ADMIN_TOKEN}`;
      let body: string | undefined;
      if (options.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      }
      return conformingAnswer(method, `${prefix}${path}`, await service.app.request(`${prefix}${path}`, { method, headers, body }));
    },
    async start(tenantId, body) {
      const res = await engine.request('POST', `/api/tenants/${tenantId}/executions`, { body });
      const json = await res.json();
      if (res.status !== 202 && res.status !== 200) throw new Error(`start answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    },
    async waitFor(tenantId, executionId, statuses, cap = 30_000) {
      const timeoutMs = scaled(cap);
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const record = await service.store.get(tenantId, executionId);
        if (record && statuses.includes(record.status)) return record;
        if (Date.now() > deadline)
          throw new Error(`execution ${executionId} is ${record?.status ?? 'missing'} after ${timeoutMs} ms, not ${statuses.join('|')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async runsOf(tenantId, executionId, atLeast = 1) {
      const deadline = Date.now() + scaled(10_000);
      for (;;) {
        const runs: { runId: string; status: string; startTime: Date }[] = [];
        for await (const run of service.client.workflow.list({ query: `WorkflowId = "${workflowIdFor(tenantId, executionId)}"` })) {
          runs.push({ runId: run.runId, status: run.status.name, startTime: run.startTime });
        }
        const settled = runs.length >= atLeast && runs.every((r) => r.status !== 'RUNNING');
        if (settled || Date.now() > deadline) {
          return runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime()).map(({ runId, status }) => ({ runId, status }));
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop() {
      await service.stop();
      await database.drop();
    },
  };
  return engine;
}

/**
 * The service's own stores and RedriveService on a pool of the test's (`db`), beside the test
 * engine's Temporal client, registry and dispatcher: for a test that counts one part's
 * statements, or runs a part as another process would (its own pool and pacing).
 */
export function ownRedrive(engine: TestEngine, db: Db, log: Log = createLog({ level: 'error' })) {
  const stores = createStores(db);
  const { registry, dispatcher, client } = engine.service;
  return { stores, log, redrive: new RedriveService(stores.executions, stores.effects, stores.definitions, registry, dispatcher, client, log) };
}
