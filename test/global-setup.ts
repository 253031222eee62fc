/**
 * One Temporal dev server for the whole test run (the real CLI binary, never a mock),
 * with the service's search attributes registered, and one bundle of the workflows, so
 * each worker the tests start (in-process or as a child process, through
 * `pipeline.orchestrator.worker.workflow-bundle`) does not bundle them again. Files read them with
 * `inject('temporalAddress')` and `inject('workflowBundlePath')`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../src/temporal/dev-server';
import { writeWorkflowBundle } from '../src/temporal/worker';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

let server: DevServer | undefined;
let bundleDir: string | undefined;

export async function setup(project: TestProject) {
  bundleDir = mkdtempSync(join(tmpdir(), 'pipeline-workflows-'));
  const workflowBundlePath = join(bundleDir, 'workflows.js');
  [server] = await Promise.all([startDevServer(), writeWorkflowBundle(workflowBundlePath)]);
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', workflowBundlePath);
  // Test files run in forks of this process, and the processes they spawn get their environment.
  process.env.PIPELINE_ORCHESTRATOR_WORKER_WORKFLOW_BUNDLE = workflowBundlePath;
}

export async function teardown() {
  await server?.stop();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
}
