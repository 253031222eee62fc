/**
 * The embedded Temporal dev server (`temporal server start-dev`) as a child process,
 * with our search attributes registered. Used by the embedded default and the tests.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { resolveTemporalCli } from './cli';

export interface DevServerOptions {
  /** SQLite file to persist to; absent = in memory */
  dbFilename?: string;
  /** frontend port; absent = a free port */
  port?: number;
  /** Web UI port; absent = no UI */
  uiPort?: number;
  namespace?: string;
}

export interface DevServer {
  address: string;
  namespace: string;
  env: TestWorkflowEnvironment;
  stop(): Promise<void>;
}

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const executable = resolveTemporalCli();
  const namespace = options.namespace ?? 'default';
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable,
      dbFilename: options.dbFilename,
      port: options.port,
      ui: options.uiPort !== undefined,
      uiPort: options.uiPort,
      namespace,
      searchAttributes: ALL_SEARCH_ATTRIBUTES,
    },
  });
  return { address: env.address, namespace, env, stop: () => env.teardown() };
}
