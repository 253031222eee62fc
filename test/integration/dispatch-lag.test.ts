/**
 * A start the store admitted but Temporal cannot start is said, not kept quiet: a run this store
 * did not dispatch holds the workflow id (CI s62a: a run another service left open; in production
 * another deployment on the same namespace and tenant, or a store restored behind Temporal). The
 * execution stays QUEUED with its dispatch retried, `pipeline_dispatch_lag_seconds` ages (the
 * PipelineDispatchLag alert watches it), and the execution's read (`pendingStart`) and history name
 * the start attempts and why they failed. Once that run is gone, the sweeper starts the execution's own, once.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { workflowIdFor } from '../../src/ids';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';

let engine: TestEngine;
let calls = 0;
const pipeline = definePipeline({
  name: 'lagging',
  steps: [
    localStep('count', (input: unknown) => {
      calls++;
      return input;
    }),
  ],
});

beforeAll(async () => {
  engine = await startTestEngine([pipeline]);
});
afterAll(async () => {
  await engine?.stop();
});

async function lagSeconds(): Promise<number> {
  const scrape = await (await engine.service.app.request('/metrics')).text();
  const line = /^pipeline_dispatch_lag_seconds (\S+)$/m.exec(scrape);
  if (!line) throw new Error('pipeline_dispatch_lag_seconds is not in the scrape');
  return Number(line[1]);
}

it('ages pipeline_dispatch_lag_seconds and names the cause in the history while a foreign run holds the workflow id, then starts the run once', async () => {
  expect(await lagSeconds()).toBe(0);
  const executionId = `held-${randomBytes(4).toString('hex')}`;
  const workflowId = workflowIdFor('acme', executionId);
  // A run nobody here dispatched, open on a queue no worker polls.
  const foreign = await engine.service.client.workflow.start('pipelineWorkflow', { workflowId, taskQueue: `nobody-${executionId}`, args: [] });

  const started = await engine.start('acme', { pipeline: 'lagging', executionId, input: {} });
  expect(started).toMatchObject({ status: 'QUEUED', dispatch: 'pending' });
  const history = async () => (await (await engine.request('GET', `/admin/tenants/acme/executions/${executionId}/history`)).json()) as any;
  await until(async () => (await history()).runs[0]?.startAttempts >= 2, 30_000, 'the sweeper to try the start again');
  const view = await history();
  expect(view.status).toBe('QUEUED');
  expect(view.runs).toHaveLength(1);
  expect(view.runs[0]).toMatchObject({ dispatch: 'start', status: 'PENDING', startedAt: null });
  // The foreign run has no dispatchId in its memo: the error says it is not this orchestrator's.
  const holder = `workflow ${workflowId} is still running, a run this orchestrator did not start (no dispatchId in its memo); the sweeper retries`;
  expect(view.runs[0].lastError).toContain(holder);
  expect(await lagSeconds()).toBeGreaterThan(0);
  // The execution's own read says the same, without the history.
  const held = (await (await engine.request('GET', `/admin/tenants/acme/executions/${executionId}`)).json()) as any;
  expect(held.status).toBe('QUEUED');
  expect(held.pendingStart).toMatchObject({ dispatchId: 'start', requestedAt: view.runs[0].requestedAt });
  expect(held.pendingStart.startAttempts).toBeGreaterThanOrEqual(2);
  expect(held.pendingStart.lastError).toContain(holder);
  expect(calls).toBe(0);

  await foreign.terminate('the test removes the run that held the id');
  await engine.waitFor('acme', executionId, ['SUCCEEDED'], 60_000);
  expect(calls).toBe(1);
  // The sweeper marks the dispatch STARTED on Temporal's answer; the run may have ended first.
  await until(async () => (await history()).runs[0]?.status === 'STARTED', 30_000, 'the dispatch marked STARTED');
  const after = await history();
  expect(after.runs).toHaveLength(1);
  expect(after.runs[0]).toMatchObject({ status: 'STARTED', lastError: null });
  expect(await lagSeconds()).toBe(0);
});
