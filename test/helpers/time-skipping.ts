/**
 * Temporal's time-skipping test server for workflow unit tests: the binary from
 * TEMPORAL_TEST_SERVER_PATH or .tools/temporal-test-server (scripts/install-temporal-test-server.sh),
 * else the SDK's own download (which needs the internet).
 *
 * A hazard of this server (temporalio/sdk-java#3088, #2606; it hung CI on 2026-11-28): when a
 * signal wakes a run whose short timer fires while the worker handles that task, the worker's
 * `CancelTimer` is refused and the task is never timed out or sent again, so the run hangs. A
 * test that signals or cancels a run while one of its timers may fire runs on the dev server
 * instead (as `redrive-job-workflow.test.ts`'s pause test does with `withDevServer`).
 */
import { accessSync, constants } from 'node:fs';
import { resolve } from 'node:path';
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';

export function testServerExecutable(env: NodeJS.ProcessEnv = process.env): { type: 'existing-path'; path: string } | { type: 'cached-download' } {
  for (const path of [
    env.TEMPORAL_TEST_SERVER_PATH,
    resolve(import.meta.dirname, '..', '..', '.tools', 'temporal-test-server', 'bin', 'temporal-test-server'),
  ]) {
    if (!path) continue;
    try {
      accessSync(path, constants.X_OK);
      return { type: 'existing-path', path };
    } catch {
      if (path === env.TEMPORAL_TEST_SERVER_PATH) throw new Error(`TEMPORAL_TEST_SERVER_PATH=${path} is not an executable file`);
    }
  }
  return { type: 'cached-download' };
}

/**
 * The tests make activities fail on purpose; the SDK would log each at WARN with a stack.
 * Keep errors only. The runtime is per process (vitest runs each file in its own fork).
 */
function quietRuntime(): void {
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    // already installed in this process: keep it
  }
}

/** A time-skipping environment with the service's search attributes registered (the workflow upserts PipelineStatus). */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({ server: { executable: testServerExecutable() } });
  try {
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(ALL_SEARCH_ATTRIBUTES.map((key) => [key.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])),
    });
  } catch (err) {
    await env.teardown();
    throw err;
  }
  return env;
}
