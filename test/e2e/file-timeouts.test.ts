/**
 * Each test file's vitest timeouts are stretched by the time scale as the file starts
 * (test/helpers/file-timeouts.ts), not only as the config loaded: a suite that starts quiet and
 * then gets neighbours gives its later files room. Proven on a child vitest whose config has
 * 1 s timeouts while its workers see a time scale of 3 (`test.env` reaches the workers, not the
 * config): its hook and test each wait 1.5 s, past the config's timeouts and inside the stretched
 * ones, and the test reads its own timeout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, expect, inject, it } from 'vitest';
import { TIME_SCALE } from '../helpers/time-scale';

const root = resolve(import.meta.dirname, '../..');
mkdirSync(join(root, '.test-output'), { recursive: true });
const dir = mkdtempSync(join(root, '.test-output', 'file-timeouts-'));
let child: ChildProcess | undefined;
afterAll(() => {
  // A child left running by a timed-out test would outlive the suite.
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

function runVitest(): Promise<{ code: number | null; output: string }> {
  return new Promise((done, fail) => {
    const vitest = spawn(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', join(dir, 'vitest.config.ts')], {
      cwd: dir,
      env: { ...process.env, PIPELINE_TEST_TIME_SCALE: '', NO_COLOR: '1' },
    });
    child = vitest;
    let output = '';
    vitest.stdout.on('data', (chunk) => (output += chunk));
    vitest.stderr.on('data', (chunk) => (output += chunk));
    vitest.on('error', fail);
    vitest.on('close', (code) => done({ code, output }));
  });
}

it('stretches a file’s test and hook timeouts by the time scale its worker sees as the file starts', async () => {
  writeFileSync(
    join(dir, 'vitest.config.ts'),
    `import { defineConfig } from 'vitest/config';
export default defineConfig({
  test: {
    root: ${JSON.stringify(dir)},
    include: ['*.check.test.ts'],
    pool: 'forks',
    testTimeout: 1000,
    hookTimeout: 1000,
    setupFiles: [${JSON.stringify(join(root, 'test/helpers/file-timeouts.ts'))}],
    provide: { baseTimeouts: { testMs: 1000, hookMs: 1000 } },
    env: { PIPELINE_TEST_TIME_SCALE: '3' },
  },
});
`,
  );
  writeFileSync(
    join(dir, 'waits.check.test.ts'),
    `import { beforeAll, expect, it } from 'vitest';
const pause = () => new Promise((r) => setTimeout(r, 1500));
beforeAll(pause);
it('waits past the config timeout', async (context) => {
  await pause();
  expect(context.task.timeout).toBeGreaterThanOrEqual(3000);
});
`,
  );
  const run = await runVitest();
  expect(run.output).toContain('1 passed');
  expect(run.code).toBe(0);
});

it('gives this project its own quiet-machine bases', (context) => {
  expect(inject('baseTimeouts')).toEqual({ testMs: 420_000, hookMs: 180_000 });
  expect(context.task.timeout).toBeGreaterThanOrEqual(Math.round(420_000 * TIME_SCALE));
});
