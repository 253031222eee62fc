/**
 * `npm start`: the whole service in one process. With no TEMPORAL_ADDRESS and no
 * DATABASE_URL it runs on the embedded default (Temporal dev server + PGlite under .data/).
 */
import { loadConfig } from './config/config';
import { ConfigError } from './errors';
import { createLog } from './log';
import { createDemoPipeline } from './pipeline/demo';
import { startDemoWorkers } from './worker-kit/demo-workers';
import { startService } from './service/runtime';

const log = createLog();

async function main(): Promise<void> {
  const config = loadConfig();
  const ports = { rest: config['pipeline.demo.rest-port'], grpc: config['pipeline.demo.grpc-port'] };
  const demo = createDemoPipeline({ restBase: `http://127.0.0.1:${ports.rest}`, grpcAddress: `127.0.0.1:${ports.grpc}` });
  const service = await startService({ config, log, pipelines: [demo] });
  // The demo's remote steps, served by the worker kit next to the service.
  const demoWorkers = await startDemoWorkers(service.db, ports).catch(async (err) => {
    await service.stop();
    throw err;
  });
  log.info({ event: 'service_started', api: service.urls.api, temporal: service.urls.temporal, temporalUi: service.urls.temporalUi });
  const lines = [
    '',
    `  API          ${service.urls.api}`,
    `  Temporal     ${service.urls.temporal}${service.urls.temporalUi ? `   (Web UI ${service.urls.temporalUi})` : ''}`,
    service.adminToken ? `  Admin token  ${config['pipeline.data-dir']}/admin-token   (export TOKEN=$(cat ${config['pipeline.data-dir']}/admin-token))` : '',
    '',
  ].filter((line, i, all) => line !== '' || i === 0 || i === all.length - 1);
  process.stderr.write(`${lines.join('\n')}\n`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ event: 'service_stopping', signal });
    await demoWorkers.stop();
    await service.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`pipeline-orchestrator: ${err.message}\n`);
    process.exit(2);
  }
  log.fatal({ event: 'service_failed_to_start', error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
