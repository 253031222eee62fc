/**
 * The embedded default's lifecycle, with `src/main.ts` run as `npm start` runs it:
 * - `kill -9` of the service leaves no process behind (the dev server's watchdog stops it);
 * - a foreign Temporal server on the dev server's port is refused, never adopted silently;
 * - every port clash is a start-up error naming its key, exit 2, no stack trace;
 * - `retry-wait-ms` below Temporal's ~1 s floor is a start-up warning naming the key.
 * Every port is 0 (the service binds free ones and names them in its `service_started` line)
 * except the one a test holds: nothing is picked, released and hoped to stay free.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { boundPort, portInUse } from '../../src/net';
import { startDevServer } from '../../src/temporal/dev-server';
import { until } from '../helpers/until';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const cleanEnv = () => {
  const env = { ...process.env };
  for (const key of Object.keys(env))
    if (key.startsWith('PIPELINE_') || key === 'DATABASE_URL' || key === 'TEMPORAL_ADDRESS' || key === 'PORT') delete env[key];
  return env;
};

/** A fresh data dir, and every port 0: the service binds free ones and reports them. */
function freshEnv(): Record<string, string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipeline-lifecycle-'));
  dirs.push(dataDir);
  return {
    PIPELINE_DATA_DIR: dataDir,
    PIPELINE_SERVER_PORT: '0',
    PIPELINE_TEMPORAL_DEV_SERVER_PORT: '0',
    PIPELINE_TEMPORAL_DEV_SERVER_UI_PORT: '0',
    PIPELINE_DEMO_REST_PORT: '0',
    PIPELINE_DEMO_GRPC_PORT: '0',
  };
}

function startMain(env: Record<string, string>, command: 'node' | 'tsx' = 'node') {
  const child =
    command === 'node'
      ? spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn(join('node_modules', '.bin', 'tsx'), ['src/main.ts'], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk) => (output.stdout += chunk));
  child.stderr!.on('data', (chunk) => (output.stderr += chunk));
  return { child, output };
}

const logLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

/** Starts the service and waits for its `service_started` line, which carries the ports it bound. */
async function startMainUp(extra: Record<string, string>, command: 'node' | 'tsx' = 'node') {
  const env = { ...freshEnv(), ...extra };
  const started = startMain(env, command);
  const { child, output } = started;
  await until(
    () => {
      if (child.exitCode !== null) throw new Error(`${command} src/main.ts exited ${child.exitCode}: ${output.stderr}`);
      return output.stdout.includes('"service_started"');
    },
    120_000,
    'the service to start',
  );
  const lines = logLines(output.stdout);
  const ports: { http: number; temporal: number; temporalUi: number; demoRest: number; demoGrpc: number } = lines.find(
    (l) => l.event === 'service_started',
  ).ports;
  return { ...started, env, lines, ports };
}

/** Starts the service with `env` over fresh ones and waits for it to exit. */
async function startMainExpectingExit(env: Record<string, string>) {
  const { child, output } = startMain({ ...freshEnv(), ...env });
  const [code] = await once(child, 'exit');
  return { code, output };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const holdPort = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer((socket) => socket.destroy())
      .once('error', reject)
      .listen(port, '127.0.0.1', () => resolve(server));
  });

describe('embedded lifecycle', () => {
  it('leaves no process behind after kill -9 of the service, and warns about retry-wait-ms below 1000', async () => {
    const { child, lines: started, ports } = await startMainUp({ PIPELINE_DEFAULTS_RETRY_WAIT_MS: '300' });
    const devServer = started.find((l) => l.event === 'temporal_dev_server_started');
    expect(devServer).toMatchObject({ pid: expect.any(Number), watchdogPid: expect.any(Number) });
    expect(alive(devServer.pid)).toBe(true);
    expect(started.find((l) => l.event === 'config_warning')).toMatchObject({ key: 'pipeline.defaults.retry-wait-ms', value: 300 });

    child.kill('SIGKILL');
    await once(child, 'exit');
    expect(devServer.port).toBe(ports.temporal);
    await until(() => !alive(devServer.pid) && !alive(devServer.watchdogPid), 30_000, 'the dev server and its watchdog to exit');
    expect(await portInUse(ports.temporal)).toBe(false);
  });

  it('stops the service and its dev server when the npm start launcher (tsx) is killed with -9', async () => {
    const { child: launcher, lines, ports } = await startMainUp({}, 'tsx');
    const devServer = lines.find((l) => l.event === 'temporal_dev_server_started');
    launcher.kill('SIGKILL');
    await until(() => !alive(devServer.pid) && !alive(devServer.watchdogPid), 60_000, 'the service to stop its dev server after its launcher died');
    await until(async () => !(await portInUse(ports.http)), 30_000, 'the API port to be released');
  });

  it('refuses a foreign Temporal server on the dev server port instead of adopting it', async () => {
    const key = 'pipeline.temporal.dev-server.port';
    const foreign = await startDevServer();
    const env = { PIPELINE_TEMPORAL_DEV_SERVER_PORT: String(foreign.port) };
    const { code, output } = await startMainExpectingExit(env).finally(async () => {
      expect(alive(foreign.pid!)).toBe(true); // left alone, and not adopted
      await foreign.stop();
    });
    expect(code).toBe(2);
    expect(output.stderr).toContain(`${key}: port ${env.PIPELINE_TEMPORAL_DEV_SERVER_PORT}`);
    expect(output.stderr).toContain('pipeline.temporal.address');
    expect(output.stderr).not.toContain('Admin token');
  });

  it.each([
    ['PIPELINE_SERVER_PORT', 'pipeline.server.port'],
    ['PIPELINE_TEMPORAL_DEV_SERVER_UI_PORT', 'pipeline.temporal.dev-server.ui-port'],
    ['PIPELINE_DEMO_REST_PORT', 'pipeline.demo.rest-port'],
    ['PIPELINE_DEMO_GRPC_PORT', 'pipeline.demo.grpc-port'],
  ])('stops with exit 2 and a message naming the key when %s is taken', async (name, key) => {
    // Held (listening) for the whole start, so nothing else can take it meanwhile; every other port is 0.
    const held = await holdPort(0);
    const env = { [name]: String(boundPort(held)) };
    const { code, output } = await startMainExpectingExit(env).finally(() => held.close());
    expect(code).toBe(2);
    expect(output.stderr).toContain(`${key}: port ${env[name]}`);
    expect(output.stderr).not.toMatch(/EADDRINUSE|at .*\(.*\.ts:\d+/);
  });
});
