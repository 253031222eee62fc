/**
 * The `pipeline-orchestrator` command (the package's bin, compiled to dist/orchestrator.js):
 *
 *   pipeline-orchestrator [start]      the service, as `npm start` runs it (same keys; the embedded
 *                                      default when neither Temporal nor Postgres is configured)
 *   pipeline-orchestrator migrate      applies the store's migrations and exits
 *   pipeline-orchestrator check-config reads the configuration and the pipelines module, starts nothing
 *
 * Exit codes: 0 done, 1 a failure (the store unreachable, …), 2 a configuration error or wrong usage.
 */
import { join, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { packagePath } from './paths';

const USAGE = `Usage: pipeline-orchestrator [start | migrate | check-config | --help | --version]

  start          run the service (the default): the API and the worker, or PIPELINE_ROLE=api|worker
  migrate        apply the store's migrations (PIPELINE_STORE_URL, else the embedded store under
                 the data dir) and exit
  check-config   read the configuration and the pipelines module (pipeline.pipelines-module),
                 say what is wrong, start nothing

Configuration: the same keys as the service (docs/configuration.md), from the environment.
`;

function fail(message: string, code: number): never {
  process.stderr.write(`pipeline-orchestrator: ${message}\n`);
  process.exit(code);
}

/** A configuration error is said in one line, exit 2; anything else exit 1. */
async function orExit(task: () => Promise<void>): Promise<void> {
  const { ConfigError, errorMessage } = await import('./errors');
  await task().catch((err: unknown) => fail(errorMessage(err), err instanceof ConfigError ? 2 : 1));
}

async function checkConfig(): Promise<void> {
  const { loadConfig } = await import('./config/config');
  const { assertStartable } = await import('./runtime');
  const { loadPipelinesModule } = await import('./pipeline/pipelines-module');
  const config = loadConfig();
  assertStartable(config);
  const modulePath = config['pipeline.pipelines-module'];
  const pipelines = modulePath === undefined ? undefined : await loadPipelinesModule(modulePath);
  process.stdout.write(
    `${JSON.stringify({
      event: 'config_ok',
      role: config['pipeline.role'],
      embedded: !config['pipeline.store.url'] || !config['pipeline.temporal.address'],
      pipelines: pipelines ? pipelines.map((p) => `${p.name}@${p.version}`) : 'the built-in demo',
    })}\n`,
  );
}

async function migrateOnly(): Promise<void> {
  const { loadConfig } = await import('./config/config');
  const { createPgDb, createPgliteDb, explainStoreFailure, storeConnectionString } = await import('./store/db');
  const { migrate } = await import('./store/migrate');
  const { createLog } = await import('./log');
  const config = loadConfig();
  const url = config['pipeline.store.url'];
  const db = url
    ? createPgDb(storeConnectionString(url, config['pipeline.store.ca-file']), { max: 1 })
    : await createPgliteDb(join(resolve(config['pipeline.data-dir']), 'pglite'));
  try {
    const applied = await migrate(db, createLog()).catch((err: unknown) => {
      throw url ? explainStoreFailure(err, url, config['pipeline.store.ca-file']) : err;
    });
    process.stdout.write(`${JSON.stringify({ event: 'migrations_applied', applied })}\n`);
  } finally {
    await db.close();
  }
}

const [command, ...rest] = process.argv.slice(2);
if (rest.length > 0) fail(`unexpected argument ${rest[0]}\n\n${USAGE}`, 2);
switch (command) {
  case undefined:
  case 'start':
    // The service's own entry: its start-up signal handlers first, then the service.
    await import('./main');
    break;
  case 'migrate':
    await orExit(migrateOnly);
    break;
  case 'check-config':
    await orExit(checkConfig);
    break;
  case '--help':
  case '-h':
  case 'help':
    process.stdout.write(USAGE);
    break;
  case '--version':
  case '-V':
    process.stdout.write(`${JSON.parse(readFileSync(packagePath('package.json'), 'utf8')).version}\n`);
    break;
  default:
    fail(`unknown command ${command}\n\n${USAGE}`, 2);
}
