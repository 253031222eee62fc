/**
 * The embedded Temporal dev server (`temporal server start-dev`) as a child process,
 * with our search attributes registered. Used by the embedded default and the tests.
 *
 * With a binary on disk we spawn it ourselves: its output is piped (JSON lines go to
 * our log, the banner is dropped, so stdout stays one JSON object per line). It runs
 * under a tiny watchdog (a second Node process) that kills it as soon as its IPC channel to
 * this process closes, so the server never outlives the service, not even a `kill -9` of
 * it. A port already in use is refused before anything is spawned, and the frontend is
 * checked to be served by the process we started: this never adopts a server it did not
 * start. Without a binary, the SDK downloads and runs it.
 *
 * The ports it is given are leased (src/port-allocator.ts) until it stops; those it is not
 * given (frontend, HTTP API, metrics, and the UI when asked for with port 0) are leased from
 * outside the kernel's ephemeral range, where the ports its internal services pick for
 * themselves (bind 0) can never land.
 */
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Log } from '../log';
import { listenerPids, portInUse } from '../net';
import { leaseGivenPort, leasePort, type PortLease } from '../port-allocator';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes';
import { resolveTemporalCli } from './cli';

export interface DevServerOptions {
  /** SQLite file to persist to; absent = in memory */
  dbFilename?: string;
  /** frontend port; absent or 0 = a leased free port */
  port?: number;
  /** Web UI port; absent = no UI, 0 = a leased free port */
  uiPort?: number;
  namespace?: string;
  log?: Log;
  /**
   * A file the server's own output is appended to, as it wrote it (all its fields, not only
   * the level and message forwarded to `log`): the test suite keeps its shared server's here,
   * so a failure on that server can be read after the run.
   */
  outputFile?: string;
}

export interface DevServer {
  address: string;
  /** the frontend port */
  port: number;
  /** the Web UI port, when it serves one */
  uiPort?: number;
  namespace: string;
  /** how it was started (benchmarks record it) */
  settings: string;
  /** the server process, when we spawned it */
  pid?: number;
  /** the watchdog that kills the server when this process goes away, when we spawned it */
  watchdogPid?: number;
  /**
   * Says a stop is coming (the service's own shutdown has begun): from now on the server's own
   * log lines are its shutdown chatter (tasks and polls failing as the worker and the
   * connection go), forwarded at debug. `stop()` implies it.
   */
  expectStop?(): void;
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
        port: options.port || undefined,
        ui: options.uiPort !== undefined,
        uiPort: options.uiPort || undefined,
        namespace,
        searchAttributes: ALL_SEARCH_ATTRIBUTES,
      },
    });
    return {
      address: env.address,
      port: Number(env.address.split(':').at(-1)),
      uiPort: options.uiPort,
      namespace,
      settings: 'SDK-downloaded dev server (TestWorkflowEnvironment.createLocal)',
      stop: () => env.teardown(),
    };
  }

  return spawnDevServer(executable.path, namespace, options);
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

async function spawnDevServer(path: string, namespace: string, options: DevServerOptions): Promise<DevServer> {
  const leases: PortLease[] = [];
  const releaseAll = () => leases.splice(0).forEach((lease) => lease.release());
  try {
    return await spawnOnLeasedPorts(path, namespace, options, leases);
  } catch (err) {
    releaseAll();
    throw err;
  }
}

/** Leases a port the caller gave (refusing one in use) or, for 0 or none, a free one. */
async function portFor(given: number | undefined, leases: PortLease[], what: string): Promise<number> {
  if (!given) {
    const lease = await leasePort();
    leases.push(lease);
    return lease.port;
  }
  const lease = (await portInUse(given)) ? undefined : await leaseGivenPort(given);
  if (!lease)
    throw new Error(
      `${what} port ${given} on 127.0.0.1 is already in use: a Temporal dev server is never started onto, or adopted from, a port something else holds`,
    );
  leases.push(lease);
  return given;
}

/**
 * The server's warnings that report nothing wrong, forwarded at debug, not warn (the service's
 * log is for what an operator acts on). "GetHistory page size is larger than threshold": a
 * client asked for a history page over the frontend's cap (256 events) and got the capped
 * page; the Temporal UI asks so each time it opens a history.
 */
export const BENIGN_SERVER_WARNINGS: readonly string[] = ['GetHistory page size is larger than threshold'];

async function spawnOnLeasedPorts(path: string, namespace: string, options: DevServerOptions, leases: PortLease[]): Promise<DevServer> {
  const port = await portFor(options.port, leases, 'frontend');
  const uiPort = options.uiPort === undefined ? undefined : await portFor(options.uiPort, leases, 'Web UI');
  const [httpPort, metricsPort] = [await portFor(undefined, leases, 'HTTP'), await portFor(undefined, leases, 'metrics')];
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--namespace', namespace, '--log-format', 'json', '--log-level', 'warn'];
  args.push('--http-port', String(httpPort), '--metrics-port', String(metricsPort));
  args.push(...(uiPort !== undefined ? ['--ui-port', String(uiPort)] : ['--headless']));
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  for (const key of ALL_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=Keyword`);

  // Its own process group: a terminal's Ctrl-C reaches the service, which drains its worker
  // and then stops the server; the server must not die first under the draining worker.
  const child = spawn(process.execPath, ['-e', WATCHDOG, path, ...args], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'], detached: true });
  // A clean exit of this process closes the channel too; the watchdog stops the server either way.
  let serverPid: number | undefined;
  const spawned = new Promise<void>((resolve) => {
    child.on('message', (message: { serverPid?: number }) => {
      serverPid = message.serverPid ?? serverPid;
      resolve();
    });
    child.once('exit', () => resolve());
  });
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
  // Once our stop has begun, the server's own chatter is expected: "Fail to process task" and
  // "service failures" as the worker's polls and the connection go, "Failed to poll for task."
  // and "network dial error" as its services lose each other. Debug, so a clean stop ends
  // quietly; only a fatal or panic line stays at warn.
  let stopping = false;
  const output = options.outputFile ? createWriteStream(options.outputFile, { flags: 'a' }) : undefined;
  // A file that cannot be written loses the copy, never the server.
  output?.on('error', (err) => options.log?.warn({ event: 'temporal_dev_server_output_unwritable', error: err.message }));
  child.once('exit', () => output?.end());
  const forward = (chunk: Buffer) => {
    output?.write(chunk);
    const text = chunk.toString('utf8');
    if (head.length < 2000) head += text;
    tail = (tail + text).slice(-2000);
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line);
        const fields = { event: 'temporal_dev_server', serverLevel: entry.level, serverMessage: entry.msg };
        if (BENIGN_SERVER_WARNINGS.includes(String(entry.msg))) options.log?.debug(fields);
        else if (stopping && !/^(fatal|panic|dpanic)$/i.test(String(entry.level))) options.log?.debug(fields);
        else options.log?.warn(fields);
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
    await spawned;
    // What answered must be the server we started, not a stranger that held the port first.
    const pids = listenerPids(port);
    if (pids && !pids.includes(serverPid!))
      throw new Error(`127.0.0.1:${port} is served by pid ${pids.join(', ') || '(unknown)'}, not by the Temporal dev server started here (pid ${serverPid})`);
  } catch (err) {
    killOnExit();
    process.removeListener('exit', killOnExit);
    // Let its ports go before the caller releases their leases.
    if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once('exit', resolve));
    throw err;
  }
  const releaseLeases = () => leases.splice(0).forEach((lease) => lease.release());
  return {
    address,
    port,
    uiPort,
    namespace,
    settings: `temporal ${args.join(' ')}`,
    get pid() {
      return serverPid;
    },
    watchdogPid: child.pid,
    expectStop() {
      stopping = true;
    },
    async stop() {
      stopping = true;
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM'); // the watchdog stops the server and exits with it
        const timer = setTimeout(killOnExit, 6000);
        await exited;
        clearTimeout(timer);
      }
      releaseLeases();
    },
  };
}
