/** Runs a worker fixture (test/fixtures/*.ts) in its own process and waits until it prints "ready". */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { basename, join } from 'node:path';
import { until } from './until';

export async function startWorkerProcess(script: string, env: Record<string, string>, timeoutMs = 60_000): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  // PIPELINE_TEST_CHILD_LOG_DIR keeps each worker process's log lines in a file, for a failure to be read after the run.
  const logDir = process.env.PIPELINE_TEST_CHILD_LOG_DIR;
  if (logDir) child.stdout!.pipe(createWriteStream(join(logDir, `${basename(script, '.ts')}-${child.pid}.log`)));
  await until(
    () => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`worker process ${script} exited with ${child.exitCode ?? child.signalCode}`);
      return out.includes('ready');
    },
    timeoutMs,
    `worker process ${script} to become ready`,
  );
  return child;
}
