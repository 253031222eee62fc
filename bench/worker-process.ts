/**
 * A worker in its own process, so the memory benchmark reads the RSS of a worker and
 * nothing else. Prints "ready" once polling. `BARE=1`: the bare variant (the SDK and
 * `bare-workflows.ts` only: no store, no engine activities). SIGUSR2: a full garbage collection.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { loadConfig } from '../src/config/config';
import { createLog } from '../src/log';
import { PipelineRegistry } from '../src/pipeline/registry';
import { createPgDb } from '../src/store/db';
import { EffectStore } from '../src/store/effect-store';
import { ExecutionStore } from '../src/store/execution-store';
import { connectNative, temporalConnectOptions, type TemporalConnectOptions } from '../src/temporal/connection';
import { installSdkLogging } from '../src/temporal/sdk-logging';
import { createEngineWorker } from '../src/temporal/worker';
import { bareActivities } from './bare';
import { benchPipelines } from './pipelines';

const log = createLog({ level: 'error' });
installSdkLogging(log, 'ERROR');
const slots = Number(process.env.ACTIVITY_SLOTS ?? 1100);
// Every parked run stays cached unless MAX_CACHED_WORKFLOWS bounds the cache (the trade BENCHMARKS.md measures).
const cached = Number(process.env.MAX_CACHED_WORKFLOWS ?? slots);
// debugMode runs the workflows on this process's main thread instead of the SDK's workflow thread
// (the same per-run state, the same reusable V8 context), so the collection below reaches them:
// a worker thread has a heap of its own that the main thread's gc() never touches.
if (typeof globalThis.gc !== 'function') throw new Error('bench/worker-process.ts must run with --expose-gc (its memory samples follow a full collection)');
const options = {
  maxConcurrentActivityTaskExecutions: slots,
  maxCachedWorkflows: cached,
  maxConcurrentWorkflowTaskExecutions: Math.min(40, cached),
  debugMode: true,
};
const taskQueue = process.env.TASK_QUEUE!;
// The bench's own dev server by address; a Temporal of the caller's own through the environment's profile, as the parent.
const connect: TemporalConnectOptions =
  process.env.BENCH_TEMPORAL_PROFILE === '1' ? temporalConnectOptions(process.env.TEMPORAL_ADDRESS!, process.env) : { address: process.env.TEMPORAL_ADDRESS! };
let worker: Worker;
if (process.env.BARE === '1') {
  worker = await Worker.create({
    connection: await connectNative(connect),
    taskQueue,
    workflowsPath: fileURLToPath(new URL('./bare-workflows.ts', import.meta.url)),
    activities: bareActivities,
    ...options,
  });
} else {
  const db = createPgDb(process.env.DATABASE_URL!, { max: 20 });
  const config = loadConfig({}, { 'pipeline.auth.tokens': [] });
  ({ worker } = await createEngineWorker({
    address: connect.address,
    connect,
    namespace: 'default',
    taskQueue,
    deps: { store: new ExecutionStore(db), effects: new EffectStore(db), registry: new PipelineRegistry(config, benchPipelines), log },
    worker: options,
  }));
}
// The benchmark samples memory held, not garbage not yet collected: SIGUSR2 runs a full
// collection (the process is started with --expose-gc) and answers "gc <V8 heap used, MB>".
process.on('SIGUSR2', () => {
  globalThis.gc!();
  // What V8 holds after it (MB): the part of RSS that is the runs' JavaScript state.
  process.stdout.write(`gc ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(2)}\n`);
});
process.stdout.write('ready\n');
await worker.run();
