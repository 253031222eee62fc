/**
 * The production build: `npm run build` writes dist/main.js and dist/cli.js; the bin runs the
 * compiled CLI (not tsx), and the compiled service loads every module it imports under plain
 * Node (a configuration error is its first word, exit 2, so nothing starts).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';

beforeAll(() => {
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { encoding: 'utf8' });
  expect(build.status, build.stderr).toBe(0);
}, 120_000);

describe('the production build', () => {
  it('answers pipeline-admin --help from dist/cli.js, with no TypeScript loader', () => {
    const run = spawnSync(process.execPath, ['bin/pipeline-admin.mjs', '--help'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: pipeline-admin');
    // The fallback to tsx says so on stderr; the compiled CLI says nothing.
    expect(run.stderr).toBe('');
    for (const file of ['dist/cli.js', 'dist/main.js']) expect(readFileSync(file, 'utf8')).not.toMatch(/from ["']tsx/);
  });

  it('runs the compiled service under plain node: a bad configuration key is named, exit 2', () => {
    const run = spawnSync(process.execPath, ['dist/main.js'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, PIPELINE_ROLE: 'nonsense' },
      timeout: 60_000,
    });
    expect(run.stderr).toMatch(/pipeline\.role/);
    expect(run.status).toBe(2);
  });
});
