/**
 * The real engine for an author's own test suite: the service's own composition (workflow,
 * activities, store, dispatcher, API) on Temporal's time-skipping test server and PGlite in
 * a temporary directory, nothing else. Ports are picked by the OS; nothing is shared with
 * another engine, so test files may run side by side.
 *
 * Time skipping: while `result()` waits for an execution, the test server moves its clock
 * over every timer and retry delay, so a retry schedule of minutes runs in seconds of wall
 * time. Delays the store computes (`nextDueAt`) are still in real time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
// A CommonJS package whose named exports Node's ESM loader cannot see: its default export, then the namespace.
import proto from '@temporalio/proto';
import { WorkflowFailedError } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { loadConfig, type ConfigInput } from '../config/config';
import { workflowIdFor } from '../ids';
import { createLog } from '../log';
import { installSdkLogging } from '../temporal/sdk-logging';
import type { PipelineDefinition } from '../pipeline/define';
import { startService, type Service } from '../runtime';
import type { ExecutionRecord } from '../store/execution-store';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { testServerExecutable } from './test-server';
import { cachedWorkflowBundle } from './workflow-bundle';

export interface TestEngineOptions {
  pipelines: PipelineDefinition[];
  /** configuration keys, as in the README's table (`pipeline.defaults.retry-limit`, …) */
  config?: ConfigInput;
  /** keep the service's JSON log lines here (default: dropped) */
  logs?: Record<string, unknown>[];
}

export interface StartOptions {
  /** default `test` */
  tenantId?: string;
  executionId?: string;
  executionKey?: string;
  correlationId?: string;
}

/** An execution's end as the service's store has it, with the final output when it succeeded. */
export interface EngineOutcome {
  record: ExecutionRecord;
  /** the final output of a SUCCEEDED execution (what `GET …/result` answers); undefined otherwise */
  output?: unknown;
}

export interface TestEngine {
  service: Service;
  /** the admin token the engine generated for its API */
  adminToken: string;
  /** starts an execution through the API (`POST …/executions`), as a client would */
  start(pipeline: string, input: unknown, options?: StartOptions): Promise<{ tenantId: string; executionId: string }>;
  /** waits, skipping time, until the execution's run has ended; then its record (and output when SUCCEEDED) */
  result(execution: { tenantId: string; executionId: string }): Promise<EngineOutcome>;
  /** a request to the engine's API with the admin token, path under the prefix (`/admin/tenants/test/executions/…`) */
  request(method: string, path: string, body?: unknown): Promise<Response>;
  /** advances the test server's clock (timers, retry delays) by `ms` */
  sleep(ms: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts an engine: the time-skipping test server (`TEMPORAL_TEST_SERVER_PATH`, else
 * `.tools/temporal-test-server`, else the SDK's download), PGlite in a temporary directory
 * and the service with the given pipelines. Stop it in `afterAll`.
 */
export async function startTestEngine(options: TestEngineOptions): Promise<TestEngine> {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      if (options.logs) for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) options.logs.push(JSON.parse(line));
      done();
    },
  });
  const log = createLog({ level: 'debug', destination: sink });
  // Before the test environment creates the SDK's runtime: its log lines go to the service log, failed activities (on purpose in tests) at ERROR only.
  try {
    installSdkLogging(log, 'ERROR');
  } catch {
    // the process installed its own runtime first: keep it
  }
  const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: testServerExecutable() } });
  const dataDir = mkdtempSync(join(tmpdir(), 'pipeline-test-engine-'));
  let service: Service | undefined;
  try {
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        ALL_SEARCH_ATTRIBUTES.map((key) => [key.name, proto.temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
      ),
    });
    const config = loadConfig(
      {},
      {
        'pipeline.data-dir': dataDir,
        'pipeline.temporal.address': env.address,
        'pipeline.temporal.namespace': env.namespace ?? 'default',
        'pipeline.temporal.call-timeout': '30s',
        // The retention pass and the sweepers run in real time; they have nothing to do in a test.
        'pipeline.sweeper.interval': '1s',
        'pipeline.orchestrator.worker.workflow-bundle': process.env.PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE ?? (await cachedWorkflowBundle()),
        ...options.config,
      },
    );
    service = await startService({ config, log, pipelines: options.pipelines, http: false });
  } catch (err) {
    await service?.stop().catch(() => undefined);
    await env.teardown().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const running = service;
  const adminToken = running.adminToken!;
  const prefix = `/${running.config['pipeline.admin.prefix']}`;

  const request = async (method: string, path: string, body?: unknown): Promise<Response> =>
    running.app.request(`${prefix}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  return {
    service: running,
    adminToken,
    request,
    async start(pipeline, input, start = {}) {
      const tenantId = start.tenantId ?? 'test';
      const { tenantId: _tenant, ...fields } = start;
      const res = await request('POST', `/api/tenants/${tenantId}/executions`, { pipeline, input, ...fields });
      const body = (await res.json()) as { executionId?: string; detail?: string };
      if (res.status !== 202 && res.status !== 200) throw new Error(`start of ${pipeline} answered ${res.status}: ${body.detail ?? JSON.stringify(body)}`);
      return { tenantId, executionId: body.executionId! };
    },
    async result({ tenantId, executionId }) {
      // The test environment's client skips time while it waits for a result.
      try {
        await env.client.workflow.getHandle(workflowIdFor(tenantId, executionId)).result();
      } catch (err) {
        if (!(err instanceof WorkflowFailedError)) throw err;
      }
      const record = await running.store.get(tenantId, executionId);
      if (!record) throw new Error(`execution ${executionId} has no record in tenant ${tenantId}`);
      return record.status === 'SUCCEEDED' ? { record, output: record.segmentInput } : { record };
    },
    sleep: (ms) => env.sleep(ms),
    async stop() {
      await running.stop();
      await env.teardown();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
