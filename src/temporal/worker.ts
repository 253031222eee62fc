/**
 * The Temporal worker: the pipeline workflow plus the engine activities, on one task queue.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, DefaultLogger, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type EngineDeps } from '../activities/engine-activities';
import { createRedriveJobActivities } from '../activities/redrive-job-activities';
import type { RedriveJobTicks } from '../service/redrive-job-ticks';
import { connectNative, type TemporalConnectOptions } from './connection';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Writes the workflows' bundle to `path`, for `pipeline.orchestrator.worker.workflow-bundle`:
 * a worker given it starts without bundling (production images build it once; the tests once per run).
 */
export async function writeWorkflowBundle(path: string): Promise<void> {
  const { code } = await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: new DefaultLogger('WARN') });
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, code);
}

export interface EngineWorkerOptions {
  address: string;
  /** TLS, API key and metadata from the temporal CLI's profile; absent = plain `address` */
  connect?: TemporalConnectOptions;
  namespace: string;
  taskQueue: string;
  deps: EngineDeps;
  /** bulk re-drive jobs: their workflow's activities run on this worker too (absent: jobs' activities wait for a worker that has them) */
  jobs?: RedriveJobTicks;
  /** extra worker options (benchmarks and tests tune concurrency, bundles) */
  worker?: Partial<WorkerOptions>;
}

export async function createEngineWorker(options: EngineWorkerOptions): Promise<{ worker: Worker; connection: NativeConnection }> {
  const connection = await connectNative(options.connect ?? { address: options.address });
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.worker?.workflowBundle ? {} : { workflowsPath: WORKFLOWS_PATH }),
    activities: { ...createActivities(options.deps), ...(options.jobs ? createRedriveJobActivities(options.jobs) : {}) },
    ...options.worker,
  });
  return { worker, connection };
}
