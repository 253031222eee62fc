/**
 * A worker in its own process, so the memory benchmark reads the RSS of a worker and
 * nothing else. Prints "ready" once polling.
 */
import { loadConfig } from '../src/config/config';
import { createLog } from '../src/log';
import { PipelineRegistry } from '../src/pipeline/registry';
import { createPgDb } from '../src/store/db';
import { EffectStore } from '../src/store/effect-store';
import { ExecutionStore } from '../src/store/execution-store';
import { installSdkLogging } from '../src/temporal/sdk-logging';
import { createEngineWorker } from '../src/temporal/worker';
import { benchPipelines } from './pipelines';

const log = createLog({ level: 'error' });
installSdkLogging(log, 'ERROR');
const db = createPgDb(process.env.DATABASE_URL!, { max: 20 });
const config = loadConfig({}, { 'pipeline.auth.tokens': [] });
const slots = Number(process.env.ACTIVITY_SLOTS ?? 1100);
// Every parked run stays cached unless MAX_CACHED_WORKFLOWS bounds the cache (the trade BENCHMARKS.md measures).
const cached = Number(process.env.MAX_CACHED_WORKFLOWS ?? slots);
const { worker } = await createEngineWorker({
  address: process.env.TEMPORAL_ADDRESS!,
  namespace: 'default',
  taskQueue: process.env.TASK_QUEUE!,
  deps: { store: new ExecutionStore(db), effects: new EffectStore(db), registry: new PipelineRegistry(config, benchPipelines), log },
  worker: { maxConcurrentActivityTaskExecutions: slots, maxCachedWorkflows: cached, maxConcurrentWorkflowTaskExecutions: Math.min(40, cached) },
});
process.stdout.write('ready\n');
await worker.run();
