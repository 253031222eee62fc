/**
 * The Temporal UI's own buttons, pressed with the real temporal CLI and client against the
 * dev server: a Reset of a FAILED run (from its first workflow task) and of a SUCCEEDED run
 * past its first step starts runs the orchestrator did not start; each ends FAILED with a
 * message that says what the execution really is, runs no step (counted), leaves the record
 * as it was, and is noted in the execution's history; a Reset copy of a fast-path run (its
 * steps local activities, whose failures reach the workflow bare) is refused the same way, with
 * no abandonStep after the refusal, and drops a bulk job's lineage. The store's begin() never
 * lets such a run take a QUEUED record. "Request Cancellation" on a bulk job aborts it in the store with
 * every item admitted whole or still SELECTED; Terminate leaves it to the watch, which marks
 * it FAILED. Terminate and Request Cancellation on a pipeline run: the run-end watch ends the
 * record FAILED at the step it was at, with one DLQ envelope, and a re-drive runs it on from
 * there (each step's invocations counted by transition identity); a run that ended before its
 * first step ends its QUEUED record too, and a record re-driven since is never touched.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { workflowIdFor } from '../../src/ids';
import { FailureTypes } from '../../src/workflows/types';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { jobWorkflowId } from '../../src/service/redrive-jobs';
import { PipelineRedriveJob, PipelineRedriveOf } from '../../src/workflows/search-attributes';
import { resolveTemporalCli } from '../../src/temporal/cli';
import { createRunEnder } from '../../src/activities/engine-activities';
import { RunEndWatch } from '../../src/service/run-end-watch';
import { createLog } from '../../src/log';
import { ADMIN_TOKEN, startTestEngine, type TestEngine } from '../helpers/engine';
import { until } from '../helpers/until';
import { scaled } from '../helpers/time-scale';

const run = promisify(execFile);
let engine: TestEngine;
/** step invocations per execution and step */
const calls = new Map<string, number>();
const count = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);

/** transition identities each gated step ran as, by execution */
const ran = new Map<string, string[]>();
/** executions whose `hold` step waits (until the gate opens or its activity is cancelled) */
const held = new Map<string, () => void>();

const pipelines = [
  definePipeline({
    name: 'gated',
    steps: [
      localStep('hold', async (input: unknown, ctx) => {
        ran.set(ctx.executionId, [...(ran.get(ctx.executionId) ?? []), ctx.transitionKey]);
        // Its first attempt holds until the gate opens or, as an operator that honours its signal
        // does, fails once its activity is cancelled.
        if (ctx.attempt === 1)
          await new Promise<void>((resolve, reject) => {
            held.set(ctx.executionId, resolve);
            ctx.signal.addEventListener('abort', () => reject(new Error('step cancelled')), { once: true });
          });
        return input;
      }),
      localStep('after', (input: unknown, ctx) => {
        ran.set(ctx.executionId, [...(ran.get(ctx.executionId) ?? []), ctx.transitionKey]);
        return input;
      }),
    ],
  }),
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
  // The same pipeline on the fast path (its steps local activities).
  definePipeline({
    name: 'two-fast',
    fastPath: true,
    steps: [
      localStep('first', (input: unknown, ctx) => {
        count(`${ctx.executionId}:first`);
        return input;
      }),
      localStep(
        'second',
        (input: unknown, ctx) => {
          count(`${ctx.executionId}:second`);
          throw Object.assign(new Error('down'), { code: 'DOWN' });
        },
        { retry: { limit: 0 } },
      ),
    ],
  }),
  // A Command step that fails: its re-drive needs the intent.
  definePipeline({
    name: 'paying',
    steps: [
      localStep(
        'charge',
        (_input: unknown, ctx) => {
          count(`${ctx.executionId}:charge`);
          throw Object.assign(new Error('card network down'), { code: 'PAY_DOWN' });
        },
        { command: true, retry: { limit: 0 } },
      ),
    ],
  }),
];

/**
 * Runs a command an answer printed, as printed (bash, from the repository root: `npx
 * pipeline-admin` runs the build), against this engine's API; answers yes at its prompt.
 */
function runPrinted(command: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', command], {
      env: { ...process.env, PIPELINE_URL: `http://127.0.0.1:${engine.service.ports.http}/pipeline`, PIPELINE_TOKEN: ADMIN_TOKEN, PIPELINE_ADMIN_CONFIG: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    child.stdin.end('y\n');
    child.on('close', (code) => resolve({ code, out }));
  });
}

/** The re-drive command a failure message gives, exactly as written there. */
const printedRedrive = (failure: string) => /re-drive it: (npx pipeline-admin redrive .*)$/.exec(failure)![1];

async function temporal(...args: string[]) {
  const cli = resolveTemporalCli();
  if (cli.type !== 'existing-path') throw new Error('the temporal CLI is not installed (bash scripts/install-temporal.sh)');
  return run(cli.path, [...args, '--address', inject('temporalAddress'), '--namespace', 'default'], { timeout: scaled(60_000) });
}
/** The activity types of a run's local-activity markers (the fast path's steps, and any abandonStep), in order. */
const localActivityTypes = (events: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>) =>
  (events.events ?? []).flatMap((event) => {
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName !== 'core_local_activity') return [];
    return [(JSON.parse(Buffer.from(marker.details?.data?.payloads?.[0]?.data ?? []).toString('utf8')) as { activity_type: string }).activity_type];
  });
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

/** A bulk job re-drives `executionId`, its run fails again, and that run is Reset to its first workflow task: the job, its run and the Reset copy. */
async function resetJobRun(executionId: string) {
  const created = await engine.request('POST', '/admin/tenants/acme/redrive-jobs', {
    body: { selection: { executionIds: [executionId] }, reason: 'made by a job', allowFailed: true },
  });
  expect(created.status).toBe(202);
  const { jobId } = (await created.json()) as { jobId: string };
  await until(
    async () => ((await (await engine.request('GET', `/admin/tenants/acme/redrive-jobs/${jobId}`)).json()) as any).counts.failedAgain === 1,
    120_000,
    "the job's run to fail again",
  );
  const jobRun = await engine.service.client.workflow.getHandle(workflowIdFor('acme', executionId)).describe();
  expect(jobRun.typedSearchAttributes.get(PipelineRedriveJob)).toBe(jobId);
  const { after } = await resetAndWait(executionId, ['--type', 'FirstWorkflowTask']);
  expect(after.status.name).toBe('FAILED');
  return { jobId, jobRun, after };
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines, { 'pipeline.server.port': 0 }, { http: true });
  for (const executionId of ['bad-1', 'good-1', 'bad-2', 'bad-3', 'bad-4', 'bad-5', 'bad-6', 'bad-7', 'bad-8'])
    await engine.start('acme', { pipeline: 'two', executionId, input: {} });
  await engine.start('acme', { pipeline: 'two', executionId: 'bad-hinted', input: {} });
  await engine.start('acme', { pipeline: 'two', executionId: 'bad-by-job', input: {} });
  await engine.waitFor('acme', 'bad-by-job', ['FAILED']);
  await engine.start('acme', { pipeline: 'paying', executionId: 'charge-1', input: {} });
  for (const id of ['fast-bad-1', 'fast-by-job']) await engine.start('acme', { pipeline: 'two-fast', executionId: id, input: {} });
  for (const id of ['bad-hinted', 'charge-1', 'fast-bad-1', 'fast-by-job']) await engine.waitFor('acme', id, ['FAILED']);
  await engine.waitFor('acme', 'good-1', ['SUCCEEDED']);
  for (const id of ['bad-1', 'bad-2', 'bad-3', 'bad-4', 'bad-5', 'bad-6', 'bad-7', 'bad-8']) await engine.waitFor('acme', id, ['FAILED']);
});
afterAll(async () => {
  for (const open of held.values()) open();
  await engine?.stop();
});

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
    expect(failure).toContain(
      'Execution bad-1 is FAILED in its record; to run it again, re-drive it: npx pipeline-admin redrive bad-1 --tenant acme --reason "…" --allow-failed',
    );
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

  it("the Reset run's failure message gives the re-drive that works for that execution, and it does, as printed (a Command step's with the intent)", async () => {
    for (const [executionId, step] of [
      ['bad-hinted', 'second'],
      ['charge-1', 'charge'],
    ] as const) {
      const { handle } = await resetAndWait(executionId, ['--type', 'FirstWorkflowTask']);
      const failure = await handle.result().then(
        () => '',
        (err: any) => String(err.cause?.message ?? err.message),
      );
      const command = printedRedrive(failure);
      expect(command.endsWith('--intent RETRY_FAILED_COMMAND')).toBe(executionId === 'charge-1');
      const before = calls.get(`${executionId}:${step}`);
      const run = await runPrinted(command);
      // Admitted and followed to its end: the step ran again and failed again (exit 6), never a usage error or a refusal.
      expect(run.out).toContain('admitted: redriveId');
      expect(run.code, run.out).toBe(6);
      expect(calls.get(`${executionId}:${step}`)).toBe(before! + 1);
      expect((await history(executionId)).redrives).toHaveLength(1);
    }
  });

  it("a Reset copy of a run a bulk job made is not listed as the job's (nor as a re-drive of the run before it)", async () => {
    const { jobId, jobRun, after } = await resetJobRun('bad-by-job');
    // The copy's own state has neither attribute (a Reset copied both from the job's run)…
    expect([after.typedSearchAttributes.get(PipelineRedriveJob), after.typedSearchAttributes.get(PipelineRedriveOf)]).toEqual([undefined, undefined]);
    // …and visibility, which the UI's list reads: the closed copy is indexed (found by its execution),
    // the job's query lists the job's own run and workflow, not the copy.
    const runIds = async (query: string) => {
      const found: string[] = [];
      for await (const run of engine.service.client.workflow.list({ query })) found.push(run.runId);
      return found;
    };
    let byJob: string[] = [];
    await until(
      async () => {
        const indexed = (await runIds(`PipelineExecutionId = 'bad-by-job' AND ExecutionStatus = 'Failed'`)).includes(after.runId);
        byJob = await runIds(`PipelineRedriveJob = '${jobId}'`);
        return indexed && byJob.includes(jobRun.runId) && !byJob.includes(after.runId);
      },
      120_000,
      "visibility to list the job's run and not its Reset copy",
    );
    expect(byJob).toHaveLength(2); // the job's run and the job's own workflow
  });

  it('a FAILED fast-path run reset to its first workflow task is refused as on the plain path: not started by the orchestrator, no abandonStep', async () => {
    const recordBefore = await record('fast-bad-1');
    const callsBefore = [calls.get('fast-bad-1:first'), calls.get('fast-bad-1:second')];
    const { after, handle } = await resetAndWait('fast-bad-1', ['--type', 'FirstWorkflowTask']);
    expect(after.status.name).toBe('FAILED');
    const failure = await handle.result().then(
      () => null,
      (err: any) => err.cause,
    );
    expect(failure?.type).toBe(FailureTypes.notStartedByOrchestrator);
    expect(failure?.message).toContain('not started by the orchestrator');
    expect([calls.get('fast-bad-1:first'), calls.get('fast-bad-1:second')]).toEqual(callsBefore);
    const recordAfter = await record('fast-bad-1');
    expect([recordAfter.status, recordAfter.version, recordAfter.runId]).toEqual([recordBefore.status, recordBefore.version, recordBefore.runId]);
    // The copy's only local activity is the step that refused it: no abandonStep marker after it.
    expect(localActivityTypes(await handle.fetchHistory())).toEqual(['two-fast:first']);
    expect((await history('fast-bad-1')).refusedRuns).toEqual([expect.objectContaining({ runId: after.runId, ownerRunId: recordBefore.runId })]);
  });

  it("a Reset copy of a fast-path run a bulk job made drops the job's lineage, as on the plain path", async () => {
    const { after } = await resetJobRun('fast-by-job');
    expect([after.typedSearchAttributes.get(PipelineRedriveJob), after.typedSearchAttributes.get(PipelineRedriveOf)]).toEqual([undefined, undefined]);
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

describe('Terminate and Request Cancellation on a pipeline run', () => {
  const dlq = async (executionId: string) =>
    (await engine.dlq.list('acme', { limit: 1000 })).entries.map((e) => e.envelope).filter((e) => e.executionId === executionId);
  const redrive = (executionId: string, body: Record<string, unknown>) =>
    engine.request('POST', `/admin/tenants/acme/executions/${executionId}/redrive`, { body: { reason: 'run it on', ...body } });

  /** Starts a gated execution and waits until its first step runs (and holds). */
  async function holding(executionId: string) {
    await engine.start('acme', { pipeline: 'gated', executionId, input: { n: 1 } });
    await until(async () => held.has(executionId), 60_000, `${executionId}'s first step to run`);
    return engine.service.client.workflow.getHandle(workflowIdFor('acme', executionId));
  }

  // Each button, and what the record's message then says (who and why, for a Terminate).
  for (const [button, errorCode, press, says] of [
    [
      'Terminate',
      'RUN_TERMINATED',
      (id: string) => temporal('workflow', 'terminate', '--workflow-id', workflowIdFor('acme', id), '--reason', 'pressed Terminate'),
      'was terminated by ',
    ],
    [
      'Request Cancellation',
      'RUN_CANCELLED',
      (id: string) => temporal('workflow', 'cancel', '--workflow-id', workflowIdFor('acme', id)),
      'was cancelled (Request Cancellation',
    ],
  ] as const) {
    it(`${button} mid-step: the record ends FAILED (${errorCode}) at that step with one DLQ envelope, and a re-drive runs it on from there`, async () => {
      const id = `${errorCode.toLowerCase().replace(/_/g, '-')}-1`;
      const handle = await holding(id);
      const { runId } = await handle.describe();
      await press(id);
      const failed = await engine.waitFor('acme', id, ['FAILED'], 120_000);
      expect(failed).toMatchObject({ status: 'FAILED', failedStepIndex: 0, terminalReason: 'non_retryable', lastErrorCode: errorCode, runId });
      expect(failed.lastErrorMessage).toContain(`its Temporal run ${runId} ${says}`);
      if (button === 'Terminate') expect(failed.lastErrorMessage).toContain('(reason: "pressed Terminate") at step 0 (hold)');
      const envelopes = await dlq(id);
      expect(envelopes.map((e) => [e.errorCode, e.terminalReason, e.transitionKey, e.retryable])).toEqual([[errorCode, 'non_retryable', `${id}:0:1`, false]]);
      expect(engine.logs.filter((l) => l.event === 'execution_run_ended_in_temporal' && l.executionId === id)).toHaveLength(1);
      // The held step has ended (its activity cancelled) or ends now, and commits nothing on the FAILED record.
      held.get(id)!();
      const res = await redrive(id, { expectedVersion: failed.version, allowFailed: true });
      expect(res.status).toBe(202);
      expect((await engine.waitFor('acme', id, ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
      expect(ran.get(id)).toEqual([`${id}:0:1`, `${id}:0:2`, `${id}:1:1`]);
      expect(await dlq(id)).toHaveLength(1);
    });
  }

  it("a run that ended before its first step ends its QUEUED record; a record re-driven since, or another run's, is untouched", async () => {
    // Two runs of the pipeline workflow that no worker polls, terminated before any step: the
    // state a Terminate leaves when it comes before the first step took the record.
    const taskQueue = `${engine.taskQueue}-unpolled`;
    const closedRun = async (executionId: string) => {
      const handle = await engine.service.client.workflow.start('pipelineWorkflow', { taskQueue, workflowId: workflowIdFor('acme', executionId), args: [{}] });
      await handle.terminate('pressed Terminate before the first step');
      return handle.firstExecutionRunId;
    };
    for (const id of ['queued-1', 'queued-2', 'queued-3']) await engine.start('acme', { pipeline: 'two', executionId: id, input: {} });
    // Each run closes a workflow task after its record reads SUCCEEDED: wait for the close, so the next run of the id can start.
    for (const id of ['queued-1', 'queued-2', 'queued-3']) await engine.service.client.workflow.getHandle(workflowIdFor('acme', id)).result();
    const runs = { q1: await closedRun('queued-1'), q2: await closedRun('queued-2'), q3: await closedRun('queued-3') };
    const { db } = engine.service;
    // A PENDING row is leased an hour ahead, as by a starter in the middle of its start: the engine's sweeper leaves it alone.
    const queue = async (id: string, dispatch: string, status: 'STARTED' | 'PENDING', runId: string | null) => {
      await db.query(`UPDATE execution_record SET status = 'QUEUED', current_step_index = 1, dispatch_id = $2 WHERE tenant_id = 'acme' AND execution_id = $1`, [
        id,
        dispatch,
      ]);
      await db.query(
        `INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, status, run_id, lease_owner, lease_until)
         VALUES ('acme', $1, $2, '{}'::jsonb, $3, $4, 'test', now() + interval '1 hour')`,
        [id, dispatch, status, runId],
      );
    };
    // queued-1: QUEUED for the dispatch whose run was terminated. queued-2: re-driven since (its
    // dispatch is a newer one, still PENDING). queued-3: its dispatch was started as another run.
    await queue('queued-1', 'redrive-q1', 'STARTED', runs.q1);
    await queue('queued-2', 'redrive-q2', 'PENDING', null);
    await db.query(`UPDATE execution_record SET run_id = $1 WHERE tenant_id = 'acme' AND execution_id = 'queued-2'`, [runs.q2]);
    await queue('queued-3', 'redrive-q3', 'STARTED', 'another-run');
    const before = { q2: await record('queued-2'), q3: await record('queued-3') };
    const s = engine.service;
    const log = createLog({ level: 'silent' });
    const watch = new RunEndWatch(s.client, [taskQueue], s.store, createRunEnder({ store: s.store, effects: engine.effects, registry: s.registry, log }), log, {
      everyMs: 0,
      graceMs: 0,
      callTimeoutMs: scaled(10_000),
    });
    // Visibility lists a closed run a moment after it closed: pass until it is seen.
    await until(async () => (await watch.sweepOnce(), (await record('queued-1')).status === 'FAILED'), 60_000, 'the watch to end queued-1');
    expect(await record('queued-1')).toMatchObject({ status: 'FAILED', failedStepIndex: 1, runId: runs.q1, lastErrorCode: 'RUN_TERMINATED' });
    expect((await record('queued-1')).lastErrorMessage).toContain('(reason: "pressed Terminate before the first step")');
    expect((await dlq('queued-1')).map((e) => [e.errorCode, e.retriesObserved])).toEqual([['RUN_TERMINATED', 0]]);
    await watch.sweepOnce();
    expect(await record('queued-2')).toEqual(before.q2);
    expect(await record('queued-3')).toEqual(before.q3);
    expect(await dlq('queued-2')).toEqual([]);
  });
});
