/**
 * How this CLI was started, so the commands its hints print run as printed: `npx
 * pipeline-admin` under npm exec / npx, `pipeline-admin` when that name on PATH is this very
 * file, else the path as node ran it (`node dist/cli.js`, `node_modules/.bin/pipeline-admin`).
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, delimiter, join, relative } from 'node:path';

export interface Started {
  argv: string[];
  execArgv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

const real = (path: string) => {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
};

export function invokedAs(started: Started = { argv: process.argv, execArgv: process.execArgv, env: process.env, cwd: process.cwd() }): string {
  const { argv, execArgv, env, cwd } = started;
  const script = argv[1] ?? 'dist/cli.js';
  // npx (npm exec) ran the bin itself; a process an npm script merely started inherits npm_command too.
  if (env.npm_command === 'exec' && /^pipeline-admin(\.mjs)?$/.test(basename(script))) return 'npx pipeline-admin';
  const bin = /^pipeline-admin(\.mjs)?$/.test(basename(script));
  if (bin) {
    const onPath = (env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'pipeline-admin'))
      .find((file) => existsSync(file));
    if (onPath && real(onPath) === real(script)) return 'pipeline-admin';
  }
  const path = relative(cwd, script) || script;
  const shown = path.startsWith('..') ? script : path;
  if (bin) return shown.includes('/') ? shown : `./${shown}`;
  return ['node', ...execArgv, shown].join(' ');
}

let cached: string | undefined;
/** The prefix of every command a hint prints. */
export function cli(): string {
  return (cached ??= invokedAs());
}
