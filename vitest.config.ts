import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import type { BaseTimeouts } from './test/helpers/file-timeouts.ts';
import { scaled } from './test/helpers/time-scale.ts';

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/** Pure logic and source checks: no Temporal, no Postgres. */
const UNIT = [
  'src/**/*.test.ts',
  'bench/**/*.test.ts',
  'packages/*/src/**/*.test.ts',
  'test/lint/**/*.test.ts',
  'test/cli/settings.test.ts',
  'examples/**/*.test.ts',
];
/** The team starter's tests run in its own project, installed from the tarballs (test/package/team-project.test.ts). */
const STARTER = ['examples/team-project/**'];
/** Tests that start an engine of their own (the examples' engine tests): a fresh fork each. */
const ENGINE_EXAMPLES = ['examples/**/*.engine.test.ts'];
/** In-process engines, each on its own database and task queue, stopped in afterAll. */
const INTEGRATION = ['test/integration/**/*.test.ts'];
/** vitest's timeouts on a quiet machine; each file gets them stretched by the time scale when it starts. */
const QUIET: BaseTimeouts = { testMs: 60_000, hookMs: 120_000 };
/** The e2e files' (kills, child processes, whole services started and stopped). */
const QUIET_E2E: BaseTimeouts = { testMs: 420_000, hookMs: 180_000 };
/** One Temporal dev server and workflow bundle, shared by the projects that declare it. */
const TEMPORAL = ['test/global-setup.ts'];

export default defineConfig({
  // This repository's packages from their sources, as tsconfig.json's paths say (no build needed to test them;
  // their exports name dist/, which test/package/team-project.test.ts installs from the packed tarballs).
  resolve: {
    alias: [
      { find: /^@pipeline-orchestrator\/worker-kit$/, replacement: source('./packages/worker-kit/src/index.ts') },
      { find: /^@pipeline-orchestrator\/worker-kit\/protocol$/, replacement: source('./packages/worker-kit/src/protocol.ts') },
      { find: /^pipeline-orchestrator$/, replacement: source('./src/index.ts') },
      { find: /^pipeline-orchestrator\/testing$/, replacement: source('./src/testing/index.ts') },
      { find: /^pipeline-orchestrator\/server$/, replacement: source('./src/server.ts') },
    ],
  },
  test: {
    // Stretched by the time scale (test/helpers/time-scale.ts: PIPELINE_TEST_TIME_SCALE, which .ci/run
    // sets from the load, or the live load if higher): here as the config loads, and again as each
    // file starts (test/helpers/file-timeouts.ts), so files that start under a risen load get room.
    testTimeout: scaled(QUIET.testMs),
    hookTimeout: scaled(QUIET.hookMs),
    provide: { baseTimeouts: QUIET },
    pool: 'forks',
    // Most of a file's time is spent waiting on Temporal, Postgres and child processes: on two
    // cores, three files at a time measured fastest (3m42 s vs 4m25 s with two, 3m58 s with four).
    maxWorkers: 3,
    // Names each file's Postgres connections after it (pg_stat_activity's application_name).
    // Sets each file's timeouts from the load as the file starts.
    setupFiles: ['./test/helpers/name-connections.ts', './test/helpers/file-timeouts.ts'],
    reporters: ['default'],
    projects: [
      // These files leave no process state behind, so a fork runs one after another without a
      // fresh module graph: most of their cost was loading the SDKs again for every file.
      // No global set-up: `vitest --project unit` needs neither Temporal nor Postgres.
      { extends: true, test: { name: 'unit', include: UNIT, exclude: [...ENGINE_EXAMPLES, ...STARTER], isolate: false } },
      { extends: true, test: { name: 'integration', include: INTEGRATION, isolate: false, globalSetup: TEMPORAL } },
      // Kills, child processes, time skipping, tracing's global provider, the CLI: a fresh fork per file.
      // Their deadlines live here, not per test, so the machine's time scale stretches every one of them.
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.test.ts', ...ENGINE_EXAMPLES],
          exclude: [...UNIT.filter((glob) => !glob.startsWith('examples/')), ...INTEGRATION, ...STARTER],
          globalSetup: TEMPORAL,
          testTimeout: scaled(QUIET_E2E.testMs),
          hookTimeout: scaled(QUIET_E2E.hookMs),
          provide: { baseTimeouts: QUIET_E2E },
        },
      },
    ],
  },
});
