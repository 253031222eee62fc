/**
 * The production build: `npm run build` writes dist/ (main.js, cli.js, orchestrator.js, …); the bins run the
 * compiled CLI (not tsx), and the compiled service loads every module it imports under plain
 * Node (a configuration error is its first word, exit 2, so nothing starts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { scaled } from '../helpers/time-scale';

beforeAll(() => {
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { encoding: 'utf8' });
  expect(build.status, build.stderr).toBe(0);
}, scaled(120_000));

describe('the production build', () => {
  it('answers pipeline-admin --help from dist/cli.js, with no TypeScript loader', () => {
    const run = spawnSync(process.execPath, ['bin/pipeline-admin.mjs', '--help'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: pipeline-admin');
    // The fallback to tsx says so on stderr; the compiled CLI says nothing.
    expect(run.stderr).toBe('');
    for (const file of ['dist/cli.js', 'dist/main.js', 'dist/orchestrator.js', 'dist/worker-check.js'])
      expect(readFileSync(file, 'utf8')).not.toMatch(/from ["']tsx/);
  });

  it('warns when src/cli changed after the build (it would run old code), and says nothing when the build is newer', () => {
    const file = 'src/cli/io.ts';
    const { atime, mtime } = statSync(file);
    const later = new Date(statSync('dist/cli.js').mtimeMs + 60_000);
    try {
      utimesSync(file, later, later);
      const stale = spawnSync(process.execPath, ['bin/pipeline-admin.mjs', '--help'], { encoding: 'utf8' });
      expect(stale.status).toBe(0);
      expect(stale.stderr).toBe('pipeline-admin: src/cli changed after dist/cli.js was built: this runs the old build (run `npm run build`)\n');
    } finally {
      utimesSync(file, atime, mtime);
    }
    expect(spawnSync(process.execPath, ['bin/pipeline-admin.mjs', '--help'], { encoding: 'utf8' }).stderr).toBe('');
  });

  it('answers the pipeline-orchestrator command from dist/: check-config on the embedded default, a bad key exit 2, an unknown command exit 2', () => {
    const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
      spawnSync(process.execPath, ['bin/pipeline-orchestrator.mjs', ...args], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, ...env },
        timeout: scaled(60_000),
      });
    const ok = run(['check-config']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ event: 'config_ok', role: 'all', embedded: true, pipelines: 'the built-in demo' });
    const bad = run(['check-config'], { PIPELINE_ROLE: 'nonsense' });
    expect(bad.stderr).toMatch(/^pipeline-orchestrator: invalid configuration:\n  pipeline\.role must be/);
    expect(bad.status).toBe(2);
    const unknown = run(['serve']);
    expect(unknown.stderr).toMatch(/unknown command serve/);
    expect(unknown.status).toBe(2);
    expect(run(['--help']).stdout).toMatch(/^Usage: pipeline-orchestrator/);
  });

  // Node 24 strips types and loads the module; Node 20 cannot, and the service says how to fix it.
  it.skipIf((process.features as { typescript?: unknown }).typescript)(
    'stops at a TypeScript pipelines module on a Node without type stripping, naming the fix, exit 2',
    () => {
      const run = spawnSync(process.execPath, ['bin/pipeline-orchestrator.mjs', 'check-config'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, PIPELINE_PIPELINES_MODULE: 'examples/readme/pipelines.ts' },
        timeout: scaled(60_000),
      });
      expect(run.stderr).toMatch(
        /^pipeline-orchestrator: pipeline\.pipelines-module: .*pipelines\.ts could not be loaded: Unknown file extension "\.ts".*compile it to JavaScript with tsc/,
      );
      expect(run.status).toBe(2);
    },
  );

  it('runs the compiled service under plain node: a bad configuration key is named, exit 2', () => {
    const run = spawnSync(process.execPath, ['dist/main.js'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, PIPELINE_ROLE: 'nonsense' },
      timeout: scaled(60_000),
    });
    expect(run.stderr).toMatch(/pipeline\.role/);
    expect(run.status).toBe(2);
  });
});
