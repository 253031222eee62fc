/**
 * `npm run bench -- --temporal-address …` refuses what it cannot use before it starts anything:
 * an address that is not host:port, and `--record` beside it (a run against another Temporal
 * is printed, never recorded). Exit 2 and one line naming the flag, as the bench's other flags.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function bench(...args: string[]) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/run.ts', ...args], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { status: run.status, stderr: run.stderr.trim() };
}

describe('bench --temporal-address', () => {
  // Its rules are bench/args.test.ts's; here, that the bench stops on them before it starts anything.
  it('exits 2 on an address it cannot use, naming the flag', () => {
    expect(bench('--only', 'overhead', '--temporal-address', 'http://host:7233')).toEqual({
      status: 2,
      stderr: 'bench: --temporal-address must be host:port, as in temporal.internal:7233 (got http://host:7233)',
    });
  });

  it('exits 2 on --record beside it', () => {
    expect(bench('--only', 'overhead', '--temporal-address', '[::1]:7233', '--record')).toEqual({
      status: 2,
      stderr: 'bench: --temporal-address measures against another Temporal and is never recorded (drop --record)',
    });
  });
});
