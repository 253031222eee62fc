/**
 * The embedded default's lifecycle, with `src/main.ts` run as `npm start` runs it:
 * - `kill -9` of the service leaves no process behind (the dev server's watchdog stops it);
 * - `kill -9` of its launcher (npm, or the tsx command) stops the service and its dev server;
 * - Ctrl-C on `npm start` is an orderly stop even when the service takes the signal late;
 * - a foreign Temporal server on the dev server's port is refused, never adopted silently;
 * - every port clash is a start-up error naming its key, exit 2, no stack trace;
 * - `retry-wait-ms` below Temporal's ~1 s floor is a start-up warning naming the key.
 * Every port is 0 (the service binds free ones and names them in its `service_started` line)
 * except the one a test holds: nothing is picked, released and hoped to stay free.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { boundPort, portInUse } from '../../src/net';
import { startDevServer } from '../../src/temporal/dev-server';
import { cleanUpMainProcesses, logLines, startMainExpectingExit, startMainUp } from '../helpers/main-process';
import { until } from '../helpers/until';

afterAll(cleanUpMainProcesses);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A process's parent, from /proc (the service is the parent of its dev server's watchdog). */
const parentPid = (pid: number) =>
  Number(
    readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ')[1],
  );

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

  it.each(['npm', 'tsx'] as const)('stops the service and its dev server when its launcher (%s) is killed with -9', async (command) => {
    const { child: launcher, lines, ports, output } = await startMainUp({}, command);
    const devServer = lines.find((l) => l.event === 'temporal_dev_server_started');
    const service = parentPid(devServer.watchdogPid);
    // The launcher is the service's parent: under `npm start`, no shell in between to hold it on.
    expect(parentPid(service)).toBe(launcher.pid);
    launcher.kill('SIGKILL');
    // Its log still reaches the test: the service holds the pipe it inherited from the launcher.
    await until(() => output.stdout.includes('"service_stopped"'), 60_000, 'the service to stop after its launcher died');
    expect(logLines(output.stdout).find((l) => l.event === 'service_stopped')).toMatchObject({ signal: 'LAUNCHER_EXITED' });
    await until(() => !alive(service), 30_000, 'the service to exit');
    await until(() => !alive(devServer.pid) && !alive(devServer.watchdogPid), 30_000, 'the dev server and its watchdog to exit');
    await until(async () => !(await portInUse(ports.http)), 30_000, 'the API port to be released');
  });

  it('stops in order on Ctrl-C under npm start even when the service takes the signal late: nothing between npm and it kills it', async () => {
    // The service paused (SIGSTOP) when the terminal's SIGINT reaches npm's whole process group:
    // a loaded machine's late event loop, made certain. A launcher that relays the signal and
    // SIGKILLs a child slow to acknowledge it (the tsx CLI waits 2 × 30 ms) would end the
    // service before its orderly stop; `npm start` runs it with `node --import tsx`, no relay.
    const { child: npm, lines, output } = await startMainUp({}, 'npm');
    const devServer = lines.find((l) => l.event === 'temporal_dev_server_started');
    const service = parentPid(devServer.watchdogPid);
    process.kill(service, 'SIGSTOP');
    process.kill(-npm.pid!, 'SIGINT');
    // Time for any relay in the group to act on the signal while the service cannot answer.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(alive(service)).toBe(true);
    process.kill(service, 'SIGCONT');
    await until(() => !alive(service), 60_000, 'the service to stop after SIGCONT');
    const stopped = logLines(output.stdout).find((l) => l.event === 'service_stopped');
    expect(stopped).toMatchObject({ signal: 'SIGINT' });
    expect(output.stderr).toContain('Stopped (SIGINT) in ');
    await until(() => !alive(devServer.pid) && !alive(devServer.watchdogPid), 30_000, 'the dev server and its watchdog to exit');
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
