import { defineConfig } from 'vitest/config';

/** Pure logic and source checks: no Temporal, no Postgres. */
const UNIT = ['src/**/*.test.ts', 'test/lint/**/*.test.ts', 'test/cli/settings.test.ts', 'examples/**/*.test.ts'];
/** Tests that start an engine of their own (the examples' engine tests): a fresh fork each. */
const ENGINE_EXAMPLES = ['examples/**/*.engine.test.ts'];
/** In-process engines, each on its own database and task queue, stopped in afterAll. */
const INTEGRATION = ['test/integration/**/*.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most of a file's time is spent waiting on Temporal, Postgres and child processes: on two
    // cores, three files at a time measured fastest (3m42 s vs 4m25 s with two, 3m58 s with four).
    maxWorkers: 3,
    reporters: ['default'],
    projects: [
      // These files leave no process state behind, so a fork runs one after another without a
      // fresh module graph: most of their cost was loading the SDKs again for every file.
      { extends: true, test: { name: 'unit', include: UNIT, exclude: ENGINE_EXAMPLES, isolate: false } },
      { extends: true, test: { name: 'integration', include: INTEGRATION, isolate: false } },
      // Kills, child processes, time skipping, tracing's global provider, the CLI: a fresh fork per file.
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts', ...ENGINE_EXAMPLES],
          exclude: [...UNIT.filter((glob) => !glob.startsWith('examples/')), ...INTEGRATION],
        },
      },
    ],
  },
});
