/**
 * A test fixture (a .ts file run through tsx) in a process of its own, started and waited on
 * until its stdout matches `ready` (the port it got, "ready", …). A process that exits first
 * fails the wait with its exit code; one that is not ready in time is killed. `output()` is everything it printed so far.
 * `nice` starts it under `nice -n` (every thread of it, from its first instruction): a process the
 * kernel schedules after the others when the cores are busy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { until } from './until';

export interface FixtureProcess {
  child: ChildProcess;
  /** what `ready` matched */
  match: RegExpExecArray;
  output: () => string;
}

export async function startFixture(fixture: string, env: NodeJS.ProcessEnv, ready: RegExp, cap: number, what: string, nice?: number): Promise<FixtureProcess> {
  const argv = [process.execPath, '--import', 'tsx', fixture];
  const [command, ...args] = nice === undefined ? argv : ['nice', '-n', String(nice), ...argv];
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  try {
    await until(
      () => {
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`${fixture} exited with ${child.exitCode ?? child.signalCode} before it was ready`);
        return ready.test(out);
      },
      cap,
      what,
    );
  } catch (err) {
    // A fixture that never got ready is not left running behind the failed test.
    if (child.exitCode === null) child.kill('SIGKILL');
    throw err;
  }
  return { child, match: ready.exec(out)!, output: () => out };
}
