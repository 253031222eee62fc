/**
 * `src/main.ts` run as `npm start` runs it, in its own process, on the embedded default: a
 * fresh data dir and every port 0 (the service binds free ones and names them in its
 * `service_started` line). Each runs in a process group of its own; call
 * `cleanUpMainProcesses()` in afterAll: it SIGKILLs every such group (a launcher's service too,
 * should a test have left one orphaned) and removes the data dirs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './until';

const dirs: string[] = [];
const children: ChildProcess[] = [];

export function cleanUpMainProcesses(): void {
  for (const child of children.splice(0)) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // the group is gone
    }
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** This process's environment without any setting of the service's own. */
const cleanEnv = () => {
  const env = { ...process.env };
  for (const key of Object.keys(env))
    if (key.startsWith('PIPELINE_') || key === 'DATABASE_URL' || key === 'TEMPORAL_ADDRESS' || key === 'PORT') delete env[key];
  return env;
};

/** A fresh data dir, and every port 0. */
function freshEnv(): Record<string, string> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pipeline-main-'));
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

/**
 * How the service is run: `node --import tsx src/main.ts`; `npm start` itself (`--silent` and
 * `--ignore-scripts`, so its stdout is the service's log alone; the prestart's install has run
 * in the suite's pretest); or the `tsx` launcher, which a developer may run by hand.
 */
const commands = {
  node: [process.execPath, '--import', 'tsx', 'src/main.ts'],
  npm: ['npm', 'start', '--silent', '--ignore-scripts'],
  tsx: [join('node_modules', '.bin', 'tsx'), 'src/main.ts'],
} as const;
/** One of `commands`, or a command line of its own run in `cwd` (the service from an installed package). */
export type MainCommand = keyof typeof commands | { argv: readonly string[]; cwd: string };
const argvOf = (command: MainCommand) => (typeof command === 'string' ? commands[command] : command.argv);

/** Runs the service (see `commands`) with `env` over a clean one, in a process group of its own. */
export function startMain(env: Record<string, string>, command: MainCommand = 'node') {
  const [file, ...args] = argvOf(command);
  const cwd = typeof command === 'string' ? undefined : command.cwd;
  const child = spawn(file, args, { cwd, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk) => (output.stdout += chunk));
  child.stderr!.on('data', (chunk) => (output.stderr += chunk));
  return { child, output };
}

export const logLines = (stdout: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

/** Starts the service with `extra` over fresh settings and waits for its `service_started` line, which carries the ports it bound. */
export async function startMainUp(extra: Record<string, string>, command: MainCommand = 'node') {
  const env = { ...freshEnv(), ...extra };
  const started = startMain(env, command);
  const { child, output } = started;
  await until(
    () => {
      // A child ended by a signal has a null exitCode and a signalCode: either way it will not start.
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(
          `${argvOf(command)
            .slice(command === 'node' ? 1 : 0)
            .join(' ')} exited ${child.exitCode ?? child.signalCode}: ${output.stderr}`,
        );
      return output.stdout.includes('"service_started"');
    },
    120_000,
    'the service to start',
  );
  const lines = logLines(output.stdout);
  const ports: { http: number; temporal: number; temporalUi: number; demoRest: number | null; demoGrpc: number | null } = lines.find(
    (l) => l.event === 'service_started',
  ).ports;
  return { ...started, env, lines, ports };
}

/** Starts the service with `env` over fresh settings and waits for it to exit. */
export async function startMainExpectingExit(env: Record<string, string>) {
  const { child, output } = startMain({ ...freshEnv(), ...env });
  const [code] = await once(child, 'exit');
  return { code, output };
}
