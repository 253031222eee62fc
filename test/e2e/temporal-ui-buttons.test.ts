/**
 * The Temporal UI's own buttons, pressed with the real temporal CLI and client against the
 * dev server: a Reset of a FAILED run (from its first workflow task) and of a SUCCEEDED run
 * past its first step starts runs the orchestrator did not start; each ends FAILED with a
 * message that says what the execution really is, runs no step (counted), leaves the record
 * as it was, and is noted in the execution's history. The store's begin() never lets such a
 * run take a QUEUED record. "Request Cancellation" on a bulk job aborts it in the store with
 * every item admitted whole or still SELECTED; Terminate leaves it to the watch, which marks
 * it FAILED.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { workflowIdFor } from '../../src/ids';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { jobWorkflowId } from '../../src/service/redrive-jobs';
import { resolveTemporalCli } from '../../src/temporal/cli';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

const run = promisify(execFile);
let engine: TestEngine;
/** step invocations per execution and step */
const calls = new Map<string, number>();
const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);

const pipelines = [
  definePipeline({
    name: 'two',
    steps: [
      localStep('first', (input: unknown, ctx) => {
        count(`${ctx.executionId}:first`);
        return input;
      }),
      localStep(
        'second',
        (input: unknown, ctx) => {
          count(`${ctx.executionId}:second`);
          if (ctx.executionId.startsWith('bad')) throw Object.assign(new Error('down'), { code: 'DOWN' });
          return input;
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
];

async function temporal(...args: string[]) {
  const cli = resolveTemporalCli();
  if (cli.type !== 'existing-path') throw new Error('the temporal CLI is not installed (bash scripts/install-temporal.sh)');
  return run(cli.path, [...args, '--address', inject('temporalAddress'), '--namespace', 'default'], { timeout: scaled(60_000) });
}
const history = async (id: string) => (await engine.request('GET', `/admin/tenants/acme/executions/${id}/history`)).json() as Promise<any>;
const record = async (id: string) => (await engine.service.store.get('acme', id))!;

/** Resets the workflow and waits for the new run to close; returns its description. */
async function resetAndWait(executionId: string, how: string[]) {
  const workflowId = workflowIdFor('acme', executionId);
  const before = await engine.service.client.workflow.getHandle(workflowId).describe();
  await temporal('workflow', 'reset', '--workflow-id', workflowId, '--run-id', before.runId, '--reason', 'pressed Reset', ...how);
  let after = before;
  await until(
    async () => {
      after = await engine.service.client.workflow.getHandle(workflowId).describe();
      return after.runId !== before.runId && after.status.name !== 'RUNNING';
    },
    120_000,
    'the reset run to close',
  );
  return { before, after, handle: engine.service.client.workflow.getHandle(workflowId, after.runId) };
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines);
  for (const executionId of ['bad-1', 'good-1', 'bad-2', 'bad-3', 'bad-4', 'bad-5', 'bad-6', 'bad-7', 'bad-8'])
    await engine.start('acme', { pipeline: 'two', executionId, input: {} });
  await engine.waitFor('acme', 'good-1', ['SUCCEEDED']);
  for (const id of ['bad-1', 'bad-2', 'bad-3', 'bad-4', 'bad-5', 'bad-6', 'bad-7', 'bad-8']) await engine.waitFor('acme', id, ['FAILED']);
});
afterAll(async () => engine?.stop());

describe('Reset in the Temporal UI', () => {
  it('a FAILED run reset to its first workflow task ends FAILED, says so, runs nothing, and the history notes it', async () => {
    const recordBefore = await record('bad-1');
    const callsBefore = [calls.get('bad-1:first'), calls.get('bad-1:second')];
    const { after, handle } = await resetAndWait('bad-1', ['--type', 'FirstWorkflowTask']);
    expect(after.status.name).toBe('FAILED');
    const failure = await handle.result().then(
      () => null,
      (err: any) => String(err.cause?.message ?? err.message),
    );
    expect(failure).toContain('not started by the orchestrator');
    expect(failure).toContain('Execution bad-1 is FAILED in its record; to run it again, re-drive it: npx pipeline-admin redrive bad-1 --tenant acme');
    expect([calls.get('bad-1:first'), calls.get('bad-1:second')]).toEqual(callsBefore);
    const recordAfter = await record('bad-1');
    expect([recordAfter.status, recordAfter.version, recordAfter.runId]).toEqual([recordBefore.status, recordBefore.version, recordBefore.runId]);
    const story = await history('bad-1');
    expect(story.refusedRuns).toEqual([
      expect.objectContaining({
        runId: after.runId,
        ownerRunId: recordBefore.runId,
        recordStatus: 'FAILED',
        note: expect.stringContaining('not started by the orchestrator'),
      }),
    ]);
  });

  it('a SUCCEEDED run reset past its first step runs no step again (counted) and ends FAILED', async () => {
    const workflowId = workflowIdFor('acme', 'good-1');
    const events = (await engine.service.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    // The workflow task that completed right after the first step's activity did.
    const firstDone = events.findIndex((e) => e.activityTaskCompletedEventAttributes);
    const resetPoint = events.slice(firstDone).find((e) => e.workflowTaskCompletedEventAttributes)!;
    const callsBefore = [calls.get('good-1:first'), calls.get('good-1:second')];
    const { after, handle } = await resetAndWait('good-1', ['--event-id', String(resetPoint.eventId)]);
    expect(after.status.name).toBe('FAILED');
    const failure = await handle.result().then(
      () => null,
      (err: any) => String(err.cause?.message ?? err.message),
    );
    expect(failure).toContain('Execution good-1 is SUCCEEDED in its record; nothing to run again.');
    expect([calls.get('good-1:first'), calls.get('good-1:second')]).toEqual(callsBefore);
    expect((await record('good-1')).status).toBe('SUCCEEDED');
    expect((await history('good-1')).refusedRuns).toHaveLength(1);
  });

  it("begin() lets only a run of the record's own dispatch row take a QUEUED record", async () => {
    const store = engine.service.store;
    const { db } = store;
    const owner = (await record('bad-2')).runId;
    // The state a re-drive leaves: QUEUED, with its own dispatch row PENDING.
    await db.query(`UPDATE execution_record SET status = 'QUEUED', dispatch_id = 'redrive-x' WHERE tenant_id = 'acme' AND execution_id = 'bad-2'`);
    await db.query(
      `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, status) VALUES ('acme', 'bad-2', 'redrive-x', '{}'::jsonb, 'PENDING')`,
    );
    // A reset copy of the old run carries the old dispatch id ('start', STARTED by another run): refused.
    const foreign = await store.begin({ tenantId: 'acme', executionId: 'bad-2', runId: 'reset-run', dispatchId: 'start' });
    expect([foreign!.status, foreign!.runId]).toEqual(['QUEUED', owner]);
    // The re-drive's own run takes it, once.
    const own = await store.begin({ tenantId: 'acme', executionId: 'bad-2', runId: 'own-run', dispatchId: 'redrive-x' });
    expect([own!.status, own!.runId]).toEqual(['RUNNING', 'own-run']);
    const dispatch = await db.query<{ status: string; run_id: string }>(
      `SELECT status, run_id FROM execution_dispatch WHERE tenant_id = 'acme' AND execution_id = 'bad-2' AND dispatch_id = 'redrive-x'`,
    );
    expect(dispatch.rows[0]).toEqual({ status: 'STARTED', run_id: 'own-run' });
  });
});

describe('Request Cancellation and Terminate on a bulk job', () => {
  const create = async (executionIds: string[], ratePerSecond: number) => {
    const res = await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
      body: {
        selection: { executionIds },
        reason: 'buttons',
        allowFailed: true,
        ratePerSecond,
        batchSize: 50,
        haltOn: { failedAgainShare: 1, minFinished: 1000, remoteOutcomeUnknown: true },
      },
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { jobId: string }).jobId;
  };
  const job = async (jobId: string) => (await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`)).json() as Promise<any>;

  it('Request Cancellation aborts the job in the store; every item is admitted whole (audit and dispatch row) or still SELECTED', async () => {
    const jobId = await create(['bad-3', 'bad-4', 'bad-5'], 0.2);
    await until(async () => (await job(jobId)).counts.admitted >= 1, 120_000, 'a first admission');
    const handle = engine.service.client.workflow.getHandle(jobWorkflowId('acme', jobId));
    await handle.cancel();
    await until(async () => (await handle.describe()).status.name !== 'RUNNING', 120_000, 'the job workflow to close');
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const done = await job(jobId);
    expect(done.status).toBe('ABORTED');
    expect(done.controlLog.at(-1)).toMatchObject({ action: 'abort', principal: 'temporal' });
    const items = await engine.service.db.query<{ execution_id: string; status: string; audits: number; dispatches: number }>(
      `SELECT i.execution_id, i.state AS status,
         (SELECT count(*)::int FROM redrive_audit a WHERE a.tenant_id = i.tenant_id AND a.execution_id = i.execution_id AND a.job_id = i.job_id) AS audits,
         (SELECT count(*)::int FROM execution_dispatch d JOIN redrive_audit a ON a.redrive_id = d.dispatch_id AND a.tenant_id = d.tenant_id
            WHERE a.tenant_id = i.tenant_id AND a.execution_id = i.execution_id AND a.job_id = i.job_id) AS dispatches
       FROM redrive_job_item i WHERE i.tenant_id = 'acme' AND i.job_id = $1`,
      [jobId],
    );
    expect(items.rows).toHaveLength(3);
    for (const item of items.rows) {
      if (item.status === 'ADMITTED') expect([item.audits, item.dispatches]).toEqual([1, 1]);
      else expect([item.status, item.audits, item.dispatches]).toEqual(['SELECTED', 0, 0]);
    }
    expect(items.rows.filter((i) => i.status === 'ADMITTED').length).toBe(done.counts.admitted);
  });

  it('Terminate: the watch marks the job FAILED with why (nothing would pace it again)', async () => {
    // Three items at 0.1/s: the job is still RUNNING (items left) when it is terminated.
    const jobId = await create(['bad-6', 'bad-7', 'bad-8'], 0.1);
    await until(async () => (await job(jobId)).counts.admitted >= 1, 60_000, 'the job to start admitting');
    await temporal('workflow', 'terminate', '--workflow-id', jobWorkflowId('acme', jobId), '--reason', 'pressed Terminate');
    await until(async () => (await job(jobId)).status === 'FAILED', 120_000, 'the watch to mark the job FAILED');
    const failed = await job(jobId);
    expect(failed.failureReason).toContain('its workflow was terminated in Temporal');
  });
});
