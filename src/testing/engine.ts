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
import type { FunctionHandler, InputOf, Operator, OutputOf, PipelineDefinition, StepDefinition } from '../pipeline/define';
import { startService, type Service } from '../runtime';
import type { ExecutionRecord } from '../store/execution-store';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { testServerExecutable } from './test-server';
import { cachedWorkflowBundle } from './workflow-bundle';

export interface TestEngineOptions<P extends PipelineDefinition = PipelineDefinition> {
  pipelines: P[];
  /**
   * Stand-ins for single LOCAL or FUNCTION steps inside an otherwise real run, by pipeline
   * then step name: `{ invoices: { reserve: async (input, ctx) => ({ reserved: true }) } }`.
   * The stand-in takes the place of the step's own code (an operator for a LOCAL step, a
   * handler for a FUNCTION step), in every registered version of that pipeline; the shape is
   * unchanged. A remote step's stand-in is a worker: `startStubWorker`. An unknown pipeline
   * or step, or a remote step, is refused when the engine starts.
   */
  overrides?: Record<string, Record<string, Operator | FunctionHandler>>;
  /** configuration keys, as in docs/configuration.md's table (`pipeline.defaults.retry-limit`, …) */
  config?: ConfigInput;
  /**
   * The directory of the engine's store (PGlite), kept after `stop`; default a temporary one,
   * removed at `stop`. Give a second engine the same `dataDir` once the first has stopped, and
   * it starts on the first one's store, as a redeploy would: its pipelines checked against the
   * shapes stored there, the executions pinned there readable and re-drivable. One engine at a
   * time: a directory in use is refused at start, naming the holder. (Each engine has its own
   * time-skipping Temporal, so a run the first left unfinished is not continued by the second.)
   */
  dataDir?: string;
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

declare const outputType: unique symbol;

/** A started execution; `Out` is its pipeline's output type, which `result` answers. */
export interface StartedExecution<Out = unknown> {
  tenantId: string;
  executionId: string;
  readonly [outputType]?: Out;
}

/** An execution's end as the service's store has it, with the final output when it succeeded. */
export interface EngineOutcome<Out = unknown> {
  record: ExecutionRecord;
  /** the final output of a SUCCEEDED execution (what `GET …/result` answers), typed by the pipeline; undefined otherwise */
  output?: Out;
}

export interface TestEngine<P extends PipelineDefinition = PipelineDefinition> {
  service: Service;
  /** the admin token the engine generated for its API */
  adminToken: string;
  /**
   * Starts an execution through the API (`POST …/executions`), as a client would. Given one
   * of the engine's pipelines, `input` must be its input type and `result` answers its
   * output type; given a name, both are `unknown`.
   */
  start<Q extends P>(pipeline: Q, input: InputOf<Q>, options?: StartOptions): Promise<StartedExecution<OutputOf<Q>>>;
  start(pipeline: P['name'], input: unknown, options?: StartOptions): Promise<StartedExecution>;
  /** waits, skipping time, until the execution's run has ended; then its record (and output when SUCCEEDED) */
  result<Out = unknown>(execution: StartedExecution<Out>): Promise<EngineOutcome<Out>>;
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
export async function startTestEngine<P extends PipelineDefinition>(options: TestEngineOptions<P>): Promise<TestEngine<P>> {
  const pipelines = withOverrides(options.pipelines, options.overrides ?? {});
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
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'pipeline-test-engine-'));
  const removeDataDir = () => {
    if (options.dataDir === undefined) rmSync(dataDir, { recursive: true, force: true });
  };
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
    service = await startService({ config, log, pipelines, http: false });
  } catch (err) {
    await service?.stop().catch(() => undefined);
    await env.teardown().catch(() => undefined);
    removeDataDir();
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
    async start(target: P | string, input: unknown, start: StartOptions = {}): Promise<StartedExecution<any>> {
      const pipeline = typeof target === 'string' ? target : target.name;
      const tenantId = start.tenantId ?? 'test';
      const { tenantId: _tenant, ...fields } = start;
      const res = await request('POST', `/api/tenants/${tenantId}/executions`, { pipeline, input, ...fields });
      const body = (await res.json()) as { executionId?: string; detail?: string };
      if (res.status !== 202 && res.status !== 200) throw new Error(`start of ${pipeline} answered ${res.status}: ${body.detail ?? JSON.stringify(body)}`);
      return { tenantId, executionId: body.executionId! };
    },
    async result<Out>({ tenantId, executionId }: StartedExecution<Out>): Promise<EngineOutcome<Out>> {
      // The test environment's client skips time while it waits for a result.
      try {
        await env.client.workflow.getHandle(workflowIdFor(tenantId, executionId)).result();
      } catch (err) {
        if (!(err instanceof WorkflowFailedError)) throw err;
      }
      const record = await running.store.get(tenantId, executionId);
      if (!record) throw new Error(`execution ${executionId} has no record in tenant ${tenantId}`);
      return record.status === 'SUCCEEDED' ? { record, output: record.segmentInput as Out } : { record };
    },
    sleep: (ms) => env.sleep(ms),
    async stop() {
      await running.stop();
      await env.teardown();
      removeDataDir();
    },
  };
}

/** The pipelines with their overridden steps' code replaced (the shape is unchanged); a stand-in for nothing is refused. */
function withOverrides<P extends PipelineDefinition>(pipelines: P[], overrides: Record<string, Record<string, Operator | FunctionHandler>>): P[] {
  for (const [name, steps] of Object.entries(overrides)) {
    const versions = pipelines.filter((pipeline) => pipeline.name === name);
    if (versions.length === 0)
      throw new TypeError(`startTestEngine: overrides.${name} names no pipeline of the engine (${pipelines.map((p) => p.name).join(', ')})`);
    for (const stepName of Object.keys(steps)) {
      const declared = versions.flatMap((pipeline) => pipeline.steps).filter((step) => step.name === stepName);
      if (declared.length === 0) throw new TypeError(`startTestEngine: overrides.${name}.${stepName} names no step of pipeline "${name}"`);
      const remote = declared.find((step) => step.transport === 'REST' || step.transport === 'GRPC');
      if (remote)
        throw new TypeError(
          `startTestEngine: overrides.${name}.${stepName} is a ${remote.transport} step; stand in for its worker with startStubWorker (or runPipeline's remote option in memory)`,
        );
    }
  }
  const replace = (step: StepDefinition, code: Operator | FunctionHandler | undefined): StepDefinition => {
    if (!code) return step;
    if (typeof code !== 'function') throw new TypeError(`startTestEngine: the override of step "${step.name}" must be a function`);
    if (step.transport === 'FUNCTION') return { ...step, handler: code as FunctionHandler };
    return step.transport === 'LOCAL' ? { ...step, run: code as Operator } : step;
  };
  return pipelines.map((pipeline) => {
    const steps = overrides[pipeline.name];
    return steps ? { ...pipeline, steps: pipeline.steps.map((step) => replace(step, steps[step.name])) } : pipeline;
  });
}
