/**
 * The operator CLI (or a command it prints) as a child process, for test/cli/: its exit code and
 * output, with stdin written and stderr watched as it comes.
 */
import { type ChildProcess, spawn } from 'node:child_process';

/**
 * The CLI's source through tsx, so the tests run the code as it is now (bin/pipeline-admin.mjs runs
 * the build in dist/, which may be older; test/cli/build.test.ts builds it and runs the bin).
 */
export const CLI = [process.execPath, '--import', 'tsx', 'src/cli/main.ts'];
/** How the CLI's hints name it when started as above (src/cli/invoked.ts): they run as printed. */
export const AS_STARTED = 'node --import tsx src/cli/main.ts';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** written to the child's stdin, which is then closed */
  input?: string;
  /** sees the child's stderr so far each time more comes (to answer or interrupt it) */
  onStderr?: (text: string, child: ChildProcess) => void;
}

/** Runs `command` with exactly `env`, until it closes. */
export function spawnRun(command: string, args: string[], env: NodeJS.ProcessEnv, options: RunOptions = {}): Promise<Run> {
  const child = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
    options.onStderr?.(stderr, child);
  });
  if (options.input !== undefined) child.stdin.end(options.input);
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

/** Runs the CLI (as `CLI` starts it) with `args` and exactly `env`. */
export const runCli = (args: string[], env: NodeJS.ProcessEnv, options: RunOptions = {}): Promise<Run> =>
  spawnRun(CLI[0], [...CLI.slice(1), ...args], env, options);
