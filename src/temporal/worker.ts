/**
 * The Temporal workers: the pipeline workflow plus the engine activities on the pipeline's
 * task queue, and bulk re-drive jobs (their workflow and activities) on their own, so a job
 * never waits behind the runs it re-drove, nor delays live runs. Every worker process serves both.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type EngineDeps } from '../activities/engine-activities';
import { createRedriveJobActivities } from '../activities/redrive-job-activities';
import { packagePath } from '../paths';
import type { RedriveJobTicks } from '../service/redrive-job-ticks';
import { connectNative, type TemporalConnectOptions } from './connection';

/**
 * The workflows' code Temporal's bundler starts from: the sources in a checkout, the build's
 * dist/workflow-code.js in an installed package (which ships no src/; scripts/build.mjs).
 */
export const WORKFLOWS_PATH = existsSync(packagePath('src', 'workflows', 'index.ts'))
  ? packagePath('src', 'workflows', 'index.ts')
  : packagePath('dist', 'workflow-code.js');

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
  /** a second task queue of runs this worker also executes (`pipeline.redrive-job.run-task-queue`, when it is its own) */
  bulkTaskQueue?: string;
  deps: EngineDeps;
  /** bulk re-drive jobs: a second worker on their own task queue (absent: jobs wait for a worker that has them) */
  jobs?: { ticks: RedriveJobTicks; taskQueue: string };
  /** extra worker options (benchmarks and tests tune concurrency, bundles) */
  worker?: Partial<WorkerOptions>;
}

/** The SDK's default number of workflow tasks a worker runs at once. */
const SDK_WORKFLOW_TASK_SLOTS = 40;

/**
 * Worker options for `pipeline.orchestrator.worker.max-cached-workflows`: absent leaves the SDK's
 * heap-derived default. A cache smaller than the SDK's 40 workflow task slots also lowers those
 * slots to the cache's size (a task needs its run cached while it runs); the SDK (1.24) does not do
 * it by itself when the slots are left at their default.
 */
export function workflowCacheOptions(maxCached: number | undefined): Partial<WorkerOptions> {
  if (maxCached === undefined) return {};
  if (maxCached === 0 || maxCached >= SDK_WORKFLOW_TASK_SLOTS) return { maxCachedWorkflows: maxCached };
  return { maxCachedWorkflows: maxCached, maxConcurrentWorkflowTaskExecutions: maxCached };
}

/** Activity tasks of bulk jobs one worker runs at once (each admits up to the jobs' pool size in parallel). */
const JOB_ACTIVITY_SLOTS = 4;

export async function createEngineWorker(
  options: EngineWorkerOptions,
): Promise<{ worker: Worker; bulkWorker?: Worker; jobWorker?: Worker; connection: NativeConnection }> {
  const connection = await connectNative(options.connect ?? { address: options.address });
  const jobActivities = options.jobs ? createRedriveJobActivities(options.jobs.ticks) : {};
  const runActivities = createActivities(options.deps);
  const worker = await Worker.create({
    connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.worker?.workflowBundle ? {} : { workflowsPath: WORKFLOWS_PATH }),
    // Jobs started before they had their own task queue still schedule their activities here.
    activities: { ...runActivities, ...jobActivities },
    ...options.worker,
  });
  // Bulk jobs' runs on a queue of their own: the same workflows and activities, their own slots.
  const bulkWorker = options.bulkTaskQueue
    ? await Worker.create({
        connection,
        namespace: options.namespace,
        taskQueue: options.bulkTaskQueue,
        ...(options.worker?.workflowBundle ? {} : { workflowsPath: WORKFLOWS_PATH }),
        activities: runActivities,
        ...options.worker,
      })
    : undefined;
  const jobWorker = options.jobs
    ? await Worker.create({
        connection,
        namespace: options.namespace,
        taskQueue: options.jobs.taskQueue,
        ...(options.worker?.workflowBundle ? {} : { workflowsPath: WORKFLOWS_PATH }),
        activities: jobActivities,
        ...options.worker,
        maxConcurrentActivityTaskExecutions: JOB_ACTIVITY_SLOTS,
      })
    : undefined;
  return { worker, bulkWorker, jobWorker, connection };
}
