/**
 * The bench service's worker role in a process of its own (`startBenchService({ roles: 'split' })`):
 * the same settings as the API process (BENCH_SETTINGS, JSON) with `pipeline.role` worker, the
 * same pipelines (BENCH_HOLD_MS for the re-driven step's hold). Prints "ready" once it serves;
 * stops on SIGTERM.
 */
import { loadConfig } from '../src/config/config';
import { createLog } from '../src/log';
import { startService } from '../src/runtime';
import { benchPipelines } from './bench-service';

const settings = JSON.parse(process.env.BENCH_SETTINGS ?? '{}') as Record<string, unknown>;
const service = await startService({
  config: loadConfig({}, settings),
  log: createLog({ level: 'error' }),
  pipelines: benchPipelines(Number(process.env.BENCH_HOLD_MS ?? 0)),
});
process.stdout.write(`ready ${service.role}\n`);
process.on('SIGTERM', () => {
  void service.stop().then(() => process.exit(0));
});
