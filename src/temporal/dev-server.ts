/**
 * The embedded Temporal dev server (`temporal server start-dev`) as a child process,
 * with our search attributes registered. Used by the embedded default and the tests.
 *
 * With a binary on disk we spawn it ourselves: its output is piped (JSON lines go to
 * our log, the banner is dropped, so stdout stays one JSON object per line). It runs
 * under a tiny watchdog (a second Node process) that kills it as soon as its IPC channel to
 * this process closes, so the server never outlives the service, not even a `kill -9` of
 * it. A port already in use is refused before anything is spawned: this never adopts a
 * server it did not start. Without a binary, the SDK downloads and runs it.
 */
import { spawn } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Log } from '../log';
import { freePort, portInUse } from '../net';
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
  log?: Log;
}

export interface DevServer {
  address: string;
  namespace: string;
  /** how it was started (benchmarks record it) */
  settings: string;
  /** the server process, when we spawned it */
  pid?: number;
  /** the watchdog that kills the server when this process goes away, when we spawned it */
  watchdogPid?: number;
  stop(): Promise<void>;
}

async function waitUntilServing(address: string, namespace: string, exited: () => string | undefined, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const failure = exited();
    if (failure) throw new Error(`temporal dev server exited during start-up: ${failure}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`temporal dev server at ${address} did not come up in ${timeoutMs} ms: ${err instanceof Error ? err.message : err}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const executable = resolveTemporalCli();
  const namespace = options.namespace ?? 'default';
  if (executable.type === 'cached-download') {
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
    return { address: env.address, namespace, settings: 'SDK-downloaded dev server (TestWorkflowEnvironment.createLocal)', stop: () => env.teardown() };
  }

  // start-dev binds more than the frontend (an HTTP API, a metrics port, and ports its internal
  // services pick for themselves): we pick the frontend (unless given) and the HTTP and metrics
  // ports, and if one of ours was taken in between, or an internal service took one of ours, we
  // try again with other picks. A given frontend port that is already taken is final.
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnDevServer(executable.path, namespace, options);
    } catch (err) {
      if (attempt >= 3 || err instanceof FrontendPortTakenError) throw err;
      options.log?.warn({ event: 'temporal_dev_server_retry', attempt, error: err instanceof Error ? err.message.slice(0, 300) : String(err) });
    }
  }
}

/**
 * The watchdog, run as `node -e WATCHDOG <binary> <args…>`: spawns the server, tells its
 * parent the server's pid, kills the server when the parent's IPC channel closes (the
 * parent exited, however it died), and exits with the server.
 */
const WATCHDOG = `
const { spawn } = require('node:child_process');
const [path, ...args] = process.argv.slice(1);
const server = spawn(path, args, { stdio: ['ignore', 'inherit', 'inherit'] });
let parentGone = false;
const stop = () => {
  if (parentGone) return;
  parentGone = true;
  server.kill('SIGTERM');
  setTimeout(() => server.kill('SIGKILL'), 5000).unref();
};
process.on('disconnect', stop);
process.on('SIGTERM', stop);
process.on('SIGINT', () => undefined);
server.on('spawn', () => process.send && process.send({ serverPid: server.pid }));
server.on('error', (err) => { process.stderr.write('watchdog: ' + err.message + '\\n'); process.exit(1); });
server.on('exit', (code, signal) => process.exit(code === null ? 1 : code));
`;

/** The frontend port we were told to use is held by something else: retrying cannot help. */
class FrontendPortTakenError extends Error {}

async function spawnDevServer(path: string, namespace: string, options: DevServerOptions): Promise<DevServer> {
  if (options.port !== undefined && (await portInUse(options.port))) {
    throw new FrontendPortTakenError(
      `port ${options.port} on 127.0.0.1 is already in use: a Temporal dev server is never started onto, or adopted from, a port something else holds`,
    );
  }
  const port = options.port ?? (await freePort());
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--namespace', namespace, '--log-format', 'json', '--log-level', 'warn'];
  args.push('--http-port', String(await freePort()), '--metrics-port', String(await freePort()));
  args.push(...(options.uiPort !== undefined ? ['--ui-port', String(options.uiPort)] : ['--headless']));
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  for (const key of ALL_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=Keyword`);

  // Its own process group: a terminal's Ctrl-C reaches the service, which drains its worker
  // and then stops the server; the server must not die first under the draining worker.
  const child = spawn(process.execPath, ['-e', WATCHDOG, path, ...args], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
  // A clean exit of this process closes the channel too; the watchdog stops the server either way.
  let serverPid: number | undefined;
  child.on('message', (message: { serverPid?: number }) => (serverPid = message.serverPid ?? serverPid));
  child.channel?.unref();
  const killOnExit = () => {
    if (serverPid) {
      try {
        process.kill(serverPid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  let exitReason: string | undefined;
  let head = '';
  let tail = '';
  child.once('exit', (code, signal) => (exitReason = `code ${code ?? signal}; ${head.slice(0, 600)}${tail.length > 600 ? ` … ${tail.slice(-300)}` : ''}`));
  const forward = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    if (head.length < 2000) head += text;
    tail = (tail + text).slice(-2000);
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line);
        options.log?.warn({ event: 'temporal_dev_server', serverLevel: entry.level, serverMessage: entry.msg });
      } catch {
        // not a log line
      }
    }
  };
  child.stdout!.on('data', forward);
  child.stderr!.on('data', forward);

  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilServing(address, namespace, () => exitReason);
  } catch (err) {
    killOnExit();
    process.removeListener('exit', killOnExit);
    // Let its ports go before a retry picks again.
    if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve));
    throw err;
  }
  return {
    address,
    namespace,
    settings: `temporal ${args.join(' ')}`,
    get pid() {
      return serverPid;
    },
    watchdogPid: child.pid,
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM'); // the watchdog stops the server and exits with it
      const timer = setTimeout(killOnExit, 6000);
      await exited;
      clearTimeout(timer);
    },
  };
}
