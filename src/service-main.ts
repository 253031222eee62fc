/**
 * The service (see `src/main.ts`, which loads this once its start-up signal handlers are in
 * place): the embedded default or the configured Temporal and Postgres, the role, the
 * deployment's pipelines or the demo with its remote workers, and the orderly stop.
 */
import { loadConfig } from './config/config';
import { ConfigError, errorMessage } from './errors';
import { createLog } from './log';
import { createDemoPipeline } from './pipeline/demo';
import { loadPipelinesModule } from './pipeline/pipelines-module';
import { startDemoWorkers } from './pipeline/demo-workers';
import { assertStartable, isEmbedded, startService } from './runtime';
import { assertDataDirFree } from './service/data-dir-lock';
import { resolve } from 'node:path';

const log = createLog();

async function main(started: () => void, launcher: number): Promise<void> {
  const config = loadConfig();
  // What the configuration alone shows is wrong, before anything binds a port or starts.
  assertStartable(config);
  // One service per embedded data dir: checked before any port, so a second start names the first.
  if (isEmbedded(config)) assertDataDirFree(resolve(config['pipeline.data-dir']));
  // The deployment's own pipelines, loaded before anything starts so a bad module stops at once.
  const modulePath = config['pipeline.pipelines-module'];
  const ownPipelines = modulePath === undefined ? undefined : await loadPipelinesModule(modulePath);
  // Without them, the demo: its remote steps served by the worker kit next to the processes that
  // run steps. They listen first: the pipeline names their addresses, and a configured 0 is known once bound.
  const demoWorkers =
    ownPipelines || config['pipeline.role'] === 'api'
      ? undefined
      : await startDemoWorkers({ rest: config['pipeline.demo.rest-port'], grpc: config['pipeline.demo.grpc-port'] }, log);
  const ports = demoWorkers?.ports ?? { rest: config['pipeline.demo.rest-port'], grpc: config['pipeline.demo.grpc-port'] };
  const pipelines = ownPipelines ?? [createDemoPipeline({ restBase: `http://127.0.0.1:${ports.rest}`, grpcAddress: `127.0.0.1:${ports.grpc}` })];
  const service = await startService({ config, log, pipelines }).catch(async (err) => {
    await demoWorkers?.stop();
    throw err;
  });
  await demoWorkers?.attach(service.db).catch(async (err) => {
    await service.stop();
    await demoWorkers.stop();
    throw err;
  });
  // The ports it listens on, read by whoever started it with 0 for some of them.
  log.info({
    event: 'service_started',
    role: service.role,
    api: service.urls.api,
    temporal: service.urls.temporal,
    temporalUi: service.urls.temporalUi,
    ports: {
      http: service.ports.http ?? null,
      temporal: service.ports.temporal ?? null,
      temporalUi: service.ports.temporalUi ?? null,
      demoRest: demoWorkers?.ports.rest ?? null,
      demoGrpc: demoWorkers?.ports.grpc ?? null,
    },
  });
  const lines = [
    '',
    service.urls.api
      ? `  API          ${service.urls.api}`
      : `  Role         ${service.role} (health on port ${service.ports.http}: /healthz /readyz /metrics)`,
    `  Temporal     ${service.urls.temporal}${service.urls.temporalUi ? `   (Web UI ${service.urls.temporalUi})` : ''}`,
    service.adminToken ? `  Admin token  ${config['pipeline.data-dir']}/admin-token   (export TOKEN=$(cat ${config['pipeline.data-dir']}/admin-token))` : '',
    '',
  ].filter((line, i, all) => line !== '' || i === 0 || i === all.length - 1);
  process.stderr.write(`${lines.join('\n')}\n`);
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    const since = Date.now();
    log.info({ event: 'service_stopping', signal });
    // The service first: its running steps may still call the demo's remote workers while it drains.
    await service.stop();
    await demoWorkers?.stop();
    const ms = Date.now() - since;
    log.info({ event: 'service_stopped', signal, ms });
    // The last line a terminal shows, under the banner's own lines: everything it started is gone.
    // Written once the log (asynchronous: pino's default destination) has flushed the line above, so it stays the last one.
    const last = `\n  Stopped (${signal}) in ${(ms / 1000).toFixed(1)} s${service.urls.temporalUi ? ': the API, the worker and the Temporal dev server' : ''}.\n`;
    log.flush(() => process.stderr.write(last, () => process.exit(0)));
  };
  started();
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  // Started by a launcher (npm under `npm start`, or the `tsx` command): if the launcher is killed (-9),
  // stop with it instead of living on as an orphan that holds the ports and the dev server. Its
  // pid was read when the process began (main.ts), so a launcher that died during start-up, or
  // in the moment since the line above, is seen gone at the first check.
  if (launcher > 1) setInterval(() => process.ppid !== launcher && void stop('LAUNCHER_EXITED'), 1000).unref();
}

/**
 * Starts the service; `started` is called when it is up, before its own stop handlers are
 * installed. `launcher`: the parent's pid as read when the process began (the service stops
 * once its parent is no longer that process).
 */
export function runService(started: () => void, launcher = process.ppid): void {
  main(started, launcher).catch((err) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`pipeline-orchestrator: ${err.message}\n`);
      process.exit(2);
    }
    log.fatal({ event: 'service_failed_to_start', error: errorMessage(err) });
    process.exit(1);
  });
}
