/**
 * One Temporal dev server for the whole test run (the real CLI binary, never a mock),
 * shared by the projects that need it (integration and e2e declare this file; the unit
 * project does not, so it runs with no Temporal binary at all),
 * with the service's search attributes registered, and one bundle of the workflows, so
 * each worker the tests start (in-process or as a child process, through
 * `pipeline.orchestrator.worker.workflow-bundle`) does not bundle them again. Files read them with
 * `inject('temporalAddress')` and `inject('workflowBundlePath')`; the server's own output is kept
 * in the file `inject('temporalOutputFile')` names.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { writeWorkflowBundle } from '../src/temporal/worker';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
    temporalOutputFile: string;
  }
}

interface Shared {
  started: Promise<{ server: DevServer; bundleDir: string; workflowBundlePath: string }>;
  users: number;
}

// Each project loads this file through its own module runner, so module state is not shared
// between projects: the one server lives on the process's global object, counted by its users.
const KEY = Symbol.for('pipeline-orchestrator.test.global-setup');
const holder = globalThis as unknown as Record<typeof KEY, Shared | undefined>;

/**
 * The shared server's own output, kept for the run (`.ci/run` prints its end when a run fails):
 * a failure on that server, such as a connection it dropped, can then be read afterwards.
 */
const DEV_SERVER_OUTPUT = process.env.PIPELINE_TEST_TEMPORAL_OUTPUT ?? join(process.cwd(), '.test-output', 'temporal-dev-server.log');

async function start(): Promise<{ server: DevServer; bundleDir: string; workflowBundlePath: string }> {
  const bundleDir = mkdtempSync(join(tmpdir(), 'pipeline-workflows-'));
  const workflowBundlePath = join(bundleDir, 'workflows.js');
  mkdirSync(dirname(DEV_SERVER_OUTPUT), { recursive: true });
  writeFileSync(DEV_SERVER_OUTPUT, `# the test run's shared Temporal dev server, started ${new Date().toISOString()}\n`);
  const [server] = await Promise.all([startDevServer({ outputFile: DEV_SERVER_OUTPUT }), writeWorkflowBundle(workflowBundlePath)]);
  return { server, bundleDir, workflowBundlePath };
}

export async function setup(project: TestProject) {
  const shared = (holder[KEY] ??= { started: start(), users: 0 });
  shared.users++;
  const { server, workflowBundlePath } = await shared.started;
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  project.provide('temporalOutputFile', DEV_SERVER_OUTPUT);
  // Test files run in forks of this process, and the processes they spawn get their environment.
  process.env.PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE = workflowBundlePath;
}

export async function teardown() {
  const shared = holder[KEY];
  if (!shared || --shared.users > 0) return;
  holder[KEY] = undefined;
  const { server, bundleDir } = await shared.started;
  await server.stop();
  rmSync(bundleDir, { recursive: true, force: true });
}
