/**
 * `pipeline-orchestrator/server`: the service for a team that embeds it in a process of its own
 * instead of running the `pipeline-orchestrator` command (docs/packaging.md). `startService`
 * takes the configuration `loadConfig` reads (environment, `PIPELINE_*` keys) and the team's
 * pipelines, and answers a running service to `stop()`.
 */
export { startService, type Service, type ServiceOptions } from './runtime';
export { loadConfig, type Config, type ConfigInput } from './config/config';
export { createLog, type Log } from './log';
export { loadPipelinesModule } from './pipeline/pipelines-module';
export { ConfigError } from './errors';
