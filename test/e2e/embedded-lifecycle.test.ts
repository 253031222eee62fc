/**
 * The embedded default's lifecycle, with `src/main.ts` run as `npm start` runs it:
 * - `kill -9` of the service leaves no process behind (the dev server's watchdog stops it);
 * - a foreign Temporal server on the dev server's port is refused, never adopted silently;
 * - every port clash is a start-up error naming its key, exit 2, no stack trace;
 * - `retry-wait-ms` below Temporal's ~1 s floor is a start-up warning naming the key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, portInUse } from '../../src/net';
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

async function portsEnv(): Promise<Record<string, string>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipeline-lifecycle-'));
  dirs.push(dataDir);
  return {
    PIPELINE_DATA_DIR: dataDir,
    PIPELINE_SERVER_PORT: String(await freePort()),
    PIPELINE_TEMPORAL_DEV_SERVER_PORT: String(await freePort()),
    PIPELINE_TEMPORAL_DEV_SERVER_UI_PORT: String(await freePort()),
    PIPELINE_DEMO_REST_PORT: String(await freePort()),
    PIPELINE_DEMO_GRPC_PORT: String(await freePort()),
  };
}

function startMain(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk) => (output.stdout += chunk));
  child.stderr!.on('data', (chunk) => (output.stderr += chunk));
  return { child, output };
}

/**
 * Starts the service on free ports and waits for its banner. Ports picked free can be taken
 * in between by another test's process (a dev server's internal services pick their own), so
 * a start that stops on a port clash is tried again with new picks.
 */
async function startMainUp(extra: Record<string, string>) {
  for (let attempt = 1; ; attempt++) {
    const env = { ...(await portsEnv()), ...extra };
    const started = startMain(env);
    const { child, output } = started;
    await until(() => child.exitCode !== null || output.stderr.includes('Admin token'), 120_000, 'the service to start');
    if (output.stderr.includes('Admin token')) return { ...started, env };
    const portClash = /cannot listen|EADDRINUSE|already in use|exited during start-up/i.test(output.stderr);
    if (!portClash || attempt >= 3) throw new Error(`npm start exited ${child.exitCode}: ${output.stderr}`);
  }
}

/**
 * Starts the service once per attempt with fresh free ports, `hold` taking one of them first,
 * and returns the first start that exits naming `key`. A start that stops on a clash with a
 * port other than the held one (taken in between by another test's process) is tried again.
 */
async function startMainExpectingClash(key: string, hold: (env: Record<string, string>) => Promise<{ stop(): Promise<void> | void }>) {
  for (let attempt = 1; ; attempt++) {
    const env = await portsEnv();
    const holder = await hold(env);
    try {
      const { child, output } = startMain(env);
      const [code] = await once(child, 'exit');
      const otherClash = !output.stderr.includes(`${key}: port`) && /: port \d+ on .* is already in use/.test(output.stderr);
      if (!otherClash || attempt >= 3) return { code, output, env };
    } finally {
      await holder.stop();
    }
  }
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
    const { child, output, env } = await startMainUp({ PIPELINE_DEFAULTS_RETRY_WAIT_MS: '300' });
    const started = output.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    const devServer = started.find((l) => l.event === 'temporal_dev_server_started');
    expect(devServer).toMatchObject({ pid: expect.any(Number), watchdogPid: expect.any(Number) });
    expect(alive(devServer.pid)).toBe(true);
    expect(started.find((l) => l.event === 'config_warning')).toMatchObject({ key: 'pipeline.defaults.retry-wait-ms', value: 300 });

    child.kill('SIGKILL');
    await once(child, 'exit');
    await until(() => !alive(devServer.pid) && !alive(devServer.watchdogPid), 30_000, 'the dev server and its watchdog to exit');
    expect(await portInUse(Number(env.PIPELINE_TEMPORAL_DEV_SERVER_PORT))).toBe(false);
  }, 180_000);

  it('stops the service and its dev server when the npm start launcher (tsx) is killed with -9', async () => {
    const env = await portsEnv();
    const launcher = spawn(join('node_modules', '.bin', 'tsx'), ['src/main.ts'], { env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(launcher);
    let [stdout, stderr] = ['', ''];
    launcher.stdout!.on('data', (chunk) => (stdout += chunk));
    launcher.stderr!.on('data', (chunk) => (stderr += chunk));
    await until(
      () => {
        if (launcher.exitCode !== null) throw new Error(`tsx src/main.ts exited ${launcher.exitCode}: ${stderr}`);
        return stderr.includes('Admin token');
      },
      120_000,
      'the service to start',
    );
    const devServer = stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .find((l) => l.event === 'temporal_dev_server_started');
    launcher.kill('SIGKILL');
    await until(() => !alive(devServer.pid) && !alive(devServer.watchdogPid), 60_000, 'the service to stop its dev server after its launcher died');
    await until(async () => !(await portInUse(Number(env.PIPELINE_SERVER_PORT))), 30_000, 'the API port to be released');
  }, 180_000);

  it('refuses a foreign Temporal server on the dev server port instead of adopting it', async () => {
    let foreignPid = 0;
    const key = 'pipeline.temporal.dev-server.port';
    const { code, output, env } = await startMainExpectingClash(key, async (env) => {
      const foreign = await startDevServer({ port: Number(env.PIPELINE_TEMPORAL_DEV_SERVER_PORT) });
      foreignPid = foreign.pid!;
      return {
        stop: async () => {
          expect(alive(foreignPid)).toBe(true); // left alone, and not adopted
          await foreign.stop();
        },
      };
    });
    expect(code).toBe(2);
    expect(output.stderr).toContain(`${key}: port ${env.PIPELINE_TEMPORAL_DEV_SERVER_PORT}`);
    expect(output.stderr).toContain('pipeline.temporal.address');
    expect(output.stderr).not.toContain('Admin token');
  }, 180_000);

  it.each([
    ['PIPELINE_SERVER_PORT', 'pipeline.server.port'],
    ['PIPELINE_TEMPORAL_DEV_SERVER_UI_PORT', 'pipeline.temporal.dev-server.ui-port'],
    ['PIPELINE_DEMO_REST_PORT', 'pipeline.demo.rest-port'],
    ['PIPELINE_DEMO_GRPC_PORT', 'pipeline.demo.grpc-port'],
  ])(
    'stops with exit 2 and a message naming the key when %s is taken',
    async (name, key) => {
      const { code, output, env } = await startMainExpectingClash(key, async (env) => {
        const held = await holdPort(Number(env[name]));
        return { stop: () => void held.close() };
      });
      expect(code).toBe(2);
      expect(output.stderr).toContain(`${key}: port ${env[name]}`);
      expect(output.stderr).not.toMatch(/EADDRINUSE|at .*\(.*\.ts:\d+/);
    },
    180_000,
  );
});
