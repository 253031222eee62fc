/**
 * How this CLI was started, so the commands its hints print run as printed: `npx
 * pipeline-admin` under npm exec / npx, `pipeline-admin` when that name on PATH is this very
 * file, else the path as node ran it (`node dist/cli.js`, `node_modules/.bin/pipeline-admin`).
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, delimiter, join, relative } from 'node:path';
import { DEFAULT_CONFIG_FILE } from './settings';

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

/** The settings flags this run was given that a printed command must repeat to reach the same service and tenant (`--timeout` is left to its default). */
export interface HintFlags {
  url?: string;
  tenant?: string;
  tokenFile?: string;
  config?: string;
}

let given: HintFlags = {};
/** Remembers the settings flags given on the command line (main.ts, once they are parsed). */
export function rememberFlags(flags: HintFlags): void {
  given = { url: flags.url, tenant: flags.tenant, tokenFile: flags.tokenFile, config: flags.config };
}

/** A word for bash: as is when it holds nothing bash reads specially, else single-quoted. */
export function shellWord(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The flags a hint repeats: those given on this command line (an environment variable or the
 * config file reaches the printed command by itself, in the same shell). Never `--token`: a
 * secret is not printed; with it, the printed command finds its token as the CLI does without
 * the flag (`--token-file`, PIPELINE_TOKEN, the config file or .data/admin-token).
 */
export function hintFlags(flags: HintFlags, options: { tenant?: boolean } = {}): string {
  const pairs: [string, string | undefined][] = [
    ['--url', flags.url],
    ['--token-file', flags.tokenFile],
    ['--config', flags.config],
    ['--tenant', options.tenant === false ? undefined : flags.tenant],
  ];
  return pairs
    .filter((pair): pair is [string, string] => pair[1] !== undefined)
    .map(([flag, value]) => ` ${flag} ${shellWord(value)}`)
    .join('');
}

/**
 * How a printed curl command reads the token the CLI found (inside double quotes), without printing it: the token file
 * given (`$(cat …)`), PIPELINE_TOKEN, or the embedded default's .data/admin-token; `$TOKEN` when
 * it came from `--token` or the config file (the hint then says to set TOKEN).
 */
export function tokenWord(env: NodeJS.ProcessEnv = process.env, flags: HintFlags & { token?: string } = given): string {
  if (flags.tokenFile) return `$(cat ${shellWord(flags.tokenFile)})`;
  if (env.PIPELINE_TOKEN) return '$PIPELINE_TOKEN';
  const config = flags.config ?? env.PIPELINE_ADMIN_CONFIG ?? DEFAULT_CONFIG_FILE;
  if (!(config && existsSync(config)) && existsSync('.data/admin-token')) return '$(cat .data/admin-token)';
  return '$TOKEN';
}

let cached: string | undefined;
/**
 * The prefix of every command a hint prints: the CLI as it was started and the settings flags
 * it was given, so the command runs as printed against the same service and tenant. `tenant:
 * false` leaves `--tenant` out (a hint that names its own).
 */
export function cli(options: { tenant?: boolean } = {}): string {
  return (cached ??= invokedAs()) + hintFlags(given, options);
}
