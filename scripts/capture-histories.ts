/**
 * Captures real Temporal histories of the pipeline workflow into test/fixtures/histories/,
 * one JSON file per run, for the replay suite (test/replay/replay.test.ts). Each scenario
 * runs on the real engine (dev server, Postgres, the service's own worker): success,
 * retries, both terminal reasons, an outcome unknown, and a run of every re-drive mode.
 *
 *   npm run capture:histories                   # every scenario
 *   npm run capture:histories -- success        # only the named ones
 *   npm run capture:histories -- redrive-job    # a bulk re-drive job: canary, halt, resume, finish
 *   npm run capture:histories -- redrive-job-continue-as-new   # a job's run that continued as new, and the run after
 *   npm run capture:histories -- pipeline-foreign-run-fails redrive-job-cancel-aborts   # the Temporal UI's Reset and Request Cancellation
 *   npm run capture:histories -- redrive-job-yield      # a job yielding to live traffic (steering its own rate)
 *   npm run capture:histories -- redrive-job-status-shown   # PipelineJobStatus kept current; an abort through the API ends Canceled
 *   npm run capture:histories -- pipeline-reset-drops-lineage   # a Reset copy of a job's run drops PipelineRedriveJob / PipelineRedriveOf
 *   npm run capture:histories -- fast-path fast-path-redrive-failed   # steps on the fast path (local activities): a local retry; a failure and its re-drive
 *   npm run capture:histories -- pipeline-fast-path-bare-failure   # a fast-path step's terminal failure and a Reset copy's refusal, read bare (no abandonStep)
 *
 * Needs Postgres (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres)
 * and the Temporal CLI (scripts/install-temporal.sh). Capture new histories when the
 * workflow gains a path; never re-capture to make a failing replay pass (see
 * docs/replay.md: a workflow change that breaks replay needs `patched()`).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { loadConfig } from '../src/config/config';
import { workflowIdFor } from '../src/ids';
import { createLog } from '../src/log';
import { definePipeline, localStep, NonRetryableException, restStep } from '../src/pipeline/define';
import { startService, type Service } from '../src/runtime';
import { redriveJobWorkflow } from '../src/workflows/redrive-job-workflow';
import { DEFAULT_HALT_ON } from '../src/contract/requests';
import { resolveTemporalCli } from '../src/temporal/cli';
import { startDevServer } from '../src/temporal/dev-server';
import { createTestDatabase } from '../test/helpers/postgres';

const OUT = join(import.meta.dirname, '..', 'test', 'fixtures', 'histories');
const TOKEN = 'capture-admin-token';
const TENANT = 'replay';

/** Steps that block until released, by execution id (the stalled run of an ORDINARY re-drive). */
const released = new Set<string>();

function pipelines(restBase: string) {
  return [
    definePipeline({
      name: 'replay-steps',
      steps: [localStep('first', (input: object) => ({ ...input, first: true })), localStep('second', (input: object) => ({ ...input, second: true }))],
    }),
    definePipeline({
      name: 'replay-flaky',
      steps: [
        localStep(
          'flaky',
          (input: object, ctx) => {
            if (ctx.attempt < 3) throw new Error(`transient failure on attempt ${ctx.attempt}`);
            return input;
          },
          { retry: { limit: 3 } },
        ),
      ],
    }),
    definePipeline({
      name: 'replay-validate',
      steps: [
        localStep('prepare', (input: object) => input),
        localStep('validate', (input: object, ctx) => {
          if (ctx.attempt === 1) throw new NonRetryableException('amount must be positive', 'INVALID_AMOUNT');
          return input;
        }),
      ],
    }),
    definePipeline({
      name: 'replay-exhausted',
      steps: [
        localStep(
          'always',
          () => {
            throw new Error('dependency down');
          },
          { retry: { limit: 1 } },
        ),
      ],
    }),
    definePipeline({
      name: 'replay-charge',
      steps: [
        localStep(
          'charge',
          (input: object, ctx) => {
            if (ctx.attempt === 1) throw new Error('card network busy');
            return { ...input, charged: true };
          },
          { command: true, retry: { limit: 0 } },
        ),
      ],
    }),
    definePipeline({
      name: 'replay-remote',
      steps: [restStep('remote', { url: `${restBase}/transition` }, { command: true, timeoutMs: 800 })],
    }),
    // The fast path (docs/decisions.md): each LOCAL step a local activity, a marker in the history.
    definePipeline({
      name: 'replay-fast',
      fastPath: true,
      steps: [
        localStep('first', (input: object) => ({ ...input, first: true })),
        localStep(
          'flaky',
          (input: object, ctx) => {
            if (ctx.attempt === 1) throw new Error('transient failure on attempt 1');
            return { ...input, flaky: ctx.attempt };
          },
          { retry: { limit: 2 } },
        ),
        localStep('last', (input: object) => ({ ...input, last: true })),
      ],
    }),
    definePipeline({
      name: 'replay-fast-validate',
      fastPath: true,
      steps: [
        localStep('prepare', (input: object) => input),
        localStep('validate', (input: object, ctx) => {
          if (ctx.attempt === 1) throw new NonRetryableException('amount must be positive', 'INVALID_AMOUNT');
          return input;
        }),
      ],
    }),
    definePipeline({
      name: 'replay-stall',
      steps: [
        localStep('wait', async (input: object, ctx) => {
          while (!released.has(ctx.executionId) && !ctx.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 20));
          return input;
        }),
        localStep('after', (input: object) => input),
      ],
    }),
  ];
}

/** A REST transition worker that hangs past the deadline on attempt 1 and answers after. */
async function startRestWorker() {
  const app = new Hono();
  app.post('/transition', async (c) => {
    const attempt = Number((c.req.header('idempotency-key') ?? ':1').split(':').pop());
    if (attempt === 1) await new Promise((resolve) => setTimeout(resolve, 3000));
    return c.json({ ok: true, attempt });
  });
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  return { base: `http://127.0.0.1:${(server.address() as { port: number }).port}`, close: () => new Promise((resolve) => server.close(resolve)) };
}

interface Capture {
  service: Service;
  request(method: string, path: string, body?: unknown): Promise<Record<string, any>>;
  waitFor(executionId: string, statuses: string[]): Promise<Record<string, any>>;
  /** Saves the history of one run once it has closed. */
  save(name: string, executionId: string, runId: string): Promise<void>;
  /** Saves the history of a workflow's latest run (a bulk re-drive job's) once it has closed. */
  saveWorkflow(name: string, workflowId: string, runId?: string): Promise<void>;
  /** Runs the temporal CLI against the capture's dev server (as the Temporal UI's buttons would act). */
  temporal(...args: string[]): string;
}

/** Resets `runId` of `workflowId` to its first workflow task, as the Temporal UI's Reset does, and waits for the copy to end FAILED: its description. */
async function resetToFirstTask(c: Capture, workflowId: string, runId: string) {
  c.temporal('workflow', 'reset', '--workflow-id', workflowId, '--run-id', runId, '--reason', 'capture: pressed Reset', '--type', 'FirstWorkflowTask');
  const handle = c.service.client.workflow.getHandle(workflowId);
  let reset = await handle.describe();
  while (reset.runId === runId || reset.status.name === 'RUNNING') {
    await new Promise((resolve) => setTimeout(resolve, 100));
    reset = await handle.describe();
  }
  if (reset.status.name !== 'FAILED') throw new Error(`the reset run ended ${reset.status.name}, not FAILED`);
  return reset;
}

/** Starts each id on `pipeline` (one that fails) and waits for all of them to be FAILED. */
async function failAll(c: Capture, pipeline: string, ids: string[]): Promise<void> {
  for (const id of ids) await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline, executionId: id, input: {} });
  for (const id of ids) await c.waitFor(id, ['FAILED']);
}

/** Polls the job's view until `reached` holds; a job that leaves RUNNING before that is an error naming `what`. */
async function jobUntil(c: Capture, jobId: string, reached: (view: any) => boolean, what: string): Promise<any> {
  for (;;) {
    const view = await c.request('GET', `/admin/tenants/${TENANT}/redrive-jobs/${jobId}`);
    if (reached(view)) return view;
    if (view.status !== 'RUNNING') throw new Error(`the job ended ${view.status} before ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const scenarios: Record<string, (c: Capture) => Promise<void>> = {
  async success(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-steps', executionId: 'success', input: { n: 1 } });
    await c.waitFor('success', ['SUCCEEDED']);
    await c.save('success', 'success', started.runId);
  },
  async retries(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-flaky', executionId: 'retries', input: {} });
    await c.waitFor('retries', ['SUCCEEDED']);
    await c.save('retries', 'retries', started.runId);
  },
  // A run that schedules each step under its own activity type (`<pipeline>:<step>`, the
  // step-named-activity-type patch), with retries; the histories above are from before it.
  async 'step-activity-types'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-flaky', executionId: 'named-types', input: {} });
    await c.waitFor('named-types', ['SUCCEEDED']);
    await c.save('step-activity-types', 'named-types', started.runId);
  },
  async 'non-retryable-then-redrive-failed'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-validate', executionId: 'validate', input: {} });
    const failed = await c.waitFor('validate', ['FAILED']);
    await c.save('terminal-non-retryable', 'validate', started.runId);
    const redriven = await c.request('POST', `/admin/tenants/${TENANT}/executions/validate/redrive`, {
      expectedVersion: failed.version,
      reason: 'payload corrected',
      allowFailed: true,
    });
    await c.waitFor('validate', ['SUCCEEDED']);
    await c.save('redrive-failed', 'validate', redriven.runId);
  },
  async 'retry-exhausted'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-exhausted', executionId: 'exhausted', input: {} });
    await c.waitFor('exhausted', ['FAILED']);
    await c.save('terminal-retry-exhausted', 'exhausted', started.runId);
  },
  async 'redrive-retry-failed-command'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-charge', executionId: 'charge', input: {} });
    const failed = await c.waitFor('charge', ['FAILED']);
    await c.save('terminal-command-retryable', 'charge', started.runId);
    const redriven = await c.request('POST', `/admin/tenants/${TENANT}/executions/charge/redrive`, {
      expectedVersion: failed.version,
      reason: 'network back',
      allowFailed: true,
      intent: 'RETRY_FAILED_COMMAND',
    });
    await c.waitFor('charge', ['SUCCEEDED']);
    await c.save('redrive-retry-failed-command', 'charge', redriven.runId);
  },
  async 'outcome-unknown-then-redrive'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-remote', executionId: 'remote', input: {} });
    const parked = await c.waitFor('remote', ['REMOTE_OUTCOME_UNKNOWN']);
    await c.save('outcome-unknown', 'remote', started.runId);
    const redriven = await c.request('POST', `/admin/tenants/${TENANT}/executions/remote/redrive`, {
      expectedVersion: parked.version,
      reason: 'worker log shows no effect',
      allowFailed: true,
      confirmedDisposition: 'NOT_APPLIED',
    });
    await c.waitFor('remote', ['SUCCEEDED']);
    await c.save('redrive-remote-outcome-unknown', 'remote', redriven.runId);
  },
  async 'redrive-ordinary'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-stall', executionId: 'stall', input: {} });
    await c.waitFor('stall', ['RUNNING']);
    const workflowId = started.workflowId as string;
    await c.service.client.workflow.getHandle(workflowId, started.runId).terminate('capture: the run is lost');
    released.add('stall');
    // The orphaned activity still commits step 0; the execution then stands RUNNING at step 1 with no run.
    let stalled = await c.waitFor('stall', ['RUNNING']);
    while (stalled.currentStepIndex !== 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      stalled = await c.waitFor('stall', ['RUNNING']);
    }
    const redriven = await c.request('POST', `/admin/tenants/${TENANT}/executions/stall/redrive`, {
      expectedVersion: stalled.version,
      reason: 'run lost',
      allowFailed: false,
    });
    await c.waitFor('stall', ['SUCCEEDED']);
    await c.save('redrive-ordinary', 'stall', redriven.runId);
  },
  // Steps on the fast path: three local-activity markers in one workflow task, the middle one
  // after a local retry (attempt 1 failed, its retry intent committed, attempt 2 succeeded).
  async 'fast-path'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-fast', executionId: 'fast', input: { n: 1 } });
    await c.waitFor('fast', ['SUCCEEDED']);
    await c.save('fast-path', 'fast', started.runId);
  },
  // A fast-path step that fails for good (its marker carries the failure), and the re-drive of
  // the FAILED execution from that step, its run on the fast path too.
  async 'fast-path-redrive-failed'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-fast-validate', executionId: 'fast-validate', input: {} });
    const failed = await c.waitFor('fast-validate', ['FAILED']);
    await c.save('fast-path-non-retryable', 'fast-validate', started.runId);
    const redriven = await c.request('POST', `/admin/tenants/${TENANT}/executions/fast-validate/redrive`, {
      expectedVersion: failed.version,
      reason: 'payload corrected',
      allowFailed: true,
    });
    await c.waitFor('fast-validate', ['SUCCEEDED']);
    await c.save('fast-path-redrive-failed', 'fast-validate', redriven.runId);
  },
  // The pipeline-fast-path-bare-failure patch: a local activity's failure reaches the workflow
  // bare (not in an ActivityFailure), and is read so. A fast-path step's terminal failure ends the
  // run with the step's own details (no abandonStep marker after it), and a Reset of that FAILED
  // run to its first workflow task is refused as not started by the orchestrator.
  async 'pipeline-fast-path-bare-failure'(c) {
    const started = await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-fast-validate', executionId: 'fast-bare', input: {} });
    const failed = await c.waitFor('fast-bare', ['FAILED']);
    await c.save('pipeline-fast-path-bare-failure', 'fast-bare', started.runId);
    const workflowId = workflowIdFor(TENANT, 'fast-bare');
    const reset = await resetToFirstTask(c, workflowId, String(failed.runId));
    await c.saveWorkflow('fast-path-foreign-run-fails', workflowId, reset.runId);
  },
  async 'redrive-job'(c) {
    // Two executions that fail again and two that succeed on a re-drive; a canary of 2 halts the job, resume finishes it.
    const ids = { again: ['job-again-1', 'job-again-2'], fixed: ['job-fixed-1', 'job-fixed-2'] };
    for (const id of ids.again) await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-exhausted', executionId: id, input: {} });
    for (const id of ids.fixed) await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-validate', executionId: id, input: {} });
    for (const id of [...ids.again, ...ids.fixed]) await c.waitFor(id, ['FAILED']);
    const job = await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
      selection: { executionIds: [...ids.again, ...ids.fixed] },
      reason: 'capture',
      allowFailed: true,
      canary: 2,
      ratePerSecond: 5,
    });
    for (;;) {
      const view = await c.request('GET', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}`);
      if (view.status === 'PAUSED') break;
      if (view.status !== 'RUNNING') throw new Error(`the job ended ${view.status} instead of halting`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}/resume`, { reason: 'capture' });
    await c.saveWorkflow('redrive-job', job.workflowId);
  },
  // The Temporal UI's Reset of a FAILED run (to its first workflow task): a run the orchestrator
  // did not start, which runs no step and fails saying so (the pipeline-foreign-run-fails patch).
  async 'pipeline-foreign-run-fails'(c) {
    await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-exhausted', executionId: 'foreign', input: {} });
    const failed = await c.waitFor('foreign', ['FAILED']);
    const workflowId = workflowIdFor(TENANT, 'foreign');
    const reset = await resetToFirstTask(c, workflowId, String(failed.runId));
    await c.saveWorkflow('pipeline-foreign-run-fails', workflowId, reset.runId);
  },
  // A Reset of a run a bulk job made (to its first workflow task; the pipeline-reset-drops-lineage
  // patch): the copy's step refuses it, and it drops the PipelineRedriveJob and PipelineRedriveOf
  // it inherited before it fails.
  async 'pipeline-reset-drops-lineage'(c) {
    await failAll(c, 'replay-exhausted', ['lineage']);
    const job = await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
      selection: { executionIds: ['lineage'] },
      reason: 'capture',
      allowFailed: true,
    });
    await jobUntil(c, job.jobId, (view) => view.status === 'COMPLETED', 'completing');
    const workflowId = workflowIdFor(TENANT, 'lineage');
    const handle = c.service.client.workflow.getHandle(workflowId);
    await handle.result().catch(() => undefined);
    const byJob = await handle.describe();
    if (byJob.searchAttributes.PipelineRedriveJob?.[0] !== job.jobId) throw new Error("the job's run does not carry PipelineRedriveJob");
    const reset = await resetToFirstTask(c, workflowId, byJob.runId);
    if (reset.searchAttributes.PipelineRedriveJob || reset.searchAttributes.PipelineRedriveOf)
      throw new Error('the reset run still carries the lineage it inherited');
    await c.saveWorkflow('pipeline-reset-drops-lineage', workflowId, reset.runId);
  },
  // "Request Cancellation" on a bulk job while it admits (the redrive-job-cancel-aborts patch):
  // the job is aborted in the store and its workflow ends Canceled.
  async 'redrive-job-cancel-aborts'(c) {
    const ids = ['job-cancel-1', 'job-cancel-2', 'job-cancel-3'];
    await failAll(c, 'replay-validate', ids);
    const job = await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
      selection: { executionIds: ids },
      reason: 'capture',
      allowFailed: true,
      ratePerSecond: 0.2,
      haltOn: { failedAgainShare: 1, minFinished: 1000, remoteOutcomeUnknown: true },
    });
    await jobUntil(c, job.jobId, (view) => view.counts.admitted >= 1, 'its first admission');
    const handle = c.service.client.workflow.getHandle(job.workflowId);
    await handle.cancel();
    await handle.result().catch(() => undefined);
    const closed = await handle.describe();
    if (closed.status.name !== 'CANCELLED') throw new Error(`the job workflow ended ${closed.status.name}, not CANCELLED`);
    const view = await c.request('GET', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}`);
    if (view.status !== 'ABORTED') throw new Error(`the job is ${view.status} in the store, not ABORTED`);
    await c.saveWorkflow('redrive-job-cancel-aborts', job.workflowId, closed.runId);
  },
  // A job paused, resumed and aborted through the API (the redrive-job-status-shown patch): its
  // PipelineJobStatus follows RUNNING, PAUSED, RUNNING, ABORTED, and its workflow ends Canceled.
  async 'redrive-job-status-shown'(c) {
    const ids = ['job-shown-1', 'job-shown-2', 'job-shown-3'];
    await failAll(c, 'replay-validate', ids);
    const job = await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
      selection: { executionIds: ids },
      reason: 'capture',
      allowFailed: true,
      ratePerSecond: 0.2,
    });
    await jobUntil(c, job.jobId, (view) => view.counts.admitted >= 1, 'its first admission');
    const handle = c.service.client.workflow.getHandle(job.workflowId);
    const shown = async (wanted: string) => {
      for (;;) {
        const { searchAttributes } = await handle.describe();
        if (searchAttributes.PipelineJobStatus?.[0] === wanted) return;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}/pause`, { reason: 'capture' });
    await shown('PAUSED');
    await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}/resume`, { reason: 'capture' });
    await shown('RUNNING');
    await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}/abort`, { reason: 'capture' });
    await handle.result().catch(() => undefined);
    const closed = await handle.describe();
    if (closed.status.name !== 'CANCELLED') throw new Error(`the job workflow ended ${closed.status.name}, not CANCELLED`);
    if (closed.searchAttributes.PipelineJobStatus?.[0] !== 'ABORTED') throw new Error('the job workflow does not show PipelineJobStatus ABORTED');
    await c.saveWorkflow('redrive-job-status-shown', job.workflowId, closed.runId);
  },
  // A job that yields to live traffic (pipeline.redrive-job.yield-to-live, the redrive-job-yield
  // patch): it starts at a fifth of its rate, steers by its admissions' times, and finishes.
  async 'redrive-job-yield'(c) {
    const ids = Array.from({ length: 10 }, (_, i) => `job-yield-${i + 1}`);
    await failAll(c, 'replay-validate', ids);
    const job = await c.request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
      selection: { executionIds: ids },
      reason: 'capture',
      allowFailed: true,
      ratePerSecond: 10,
    });
    await jobUntil(c, job.jobId, (view) => view.status === 'COMPLETED', 'completing');
    await c.service.client.workflow.getHandle(job.workflowId).result();
    await c.saveWorkflow('redrive-job-yield', job.workflowId);
  },
  async 'redrive-job-continue-as-new'(c) {
    // A job of 12 items whose workflow is started with a low history limit (as the API's would
    // be at 8,000 events): its first run ends in continue-as-new past its canary, the last finishes.
    const ids = Array.from({ length: 12 }, (_, i) => `job-can-${i + 1}`);
    for (const id of ids) await c.request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'replay-validate', executionId: id, input: {} });
    for (const id of ids) await c.waitFor(id, ['FAILED']);
    const jobs = c.service.jobs;
    const selection = await jobs.store.selectByIds(TENANT, ids);
    const request = {
      selection: { executionIds: ids },
      reason: 'capture',
      allowFailed: true,
      batchSize: 50,
      ratePerSecond: 4,
      canary: 2,
      haltOn: DEFAULT_HALT_ON,
    };
    const jobId = 'continue-as-new';
    await jobs.store.create({
      tenantId: TENANT,
      jobId,
      principal: 'capture',
      reason: 'capture',
      request,
      batchSize: 50,
      ratePerSecond: 4,
      canary: 2,
      haltOn: DEFAULT_HALT_ON,
      selection,
    });
    const handle = await c.service.client.workflow.start(redriveJobWorkflow, {
      workflowId: `redrive-job/${TENANT}/${jobId}`,
      taskQueue: c.service.config['pipeline.temporal.task-queue'],
      args: [{ tenantId: TENANT, jobId, limits: { historyLength: 40 } }],
    });
    await jobs.store.markStarted(TENANT, jobId);
    const result = await handle.result();
    if (result.status !== 'COMPLETED') throw new Error(`the job ended ${result.status}`);
    await c.saveWorkflow('redrive-job-continued-as-new', handle.workflowId, handle.firstExecutionRunId);
    const last = (await handle.describe()).runId;
    if (last === handle.firstExecutionRunId) throw new Error('the job never continued as new');
    await c.saveWorkflow('redrive-job-after-continue-as-new', handle.workflowId, last);
  },
};

async function main() {
  const wanted = process.argv.slice(2);
  for (const name of wanted) if (!(name in scenarios)) throw new Error(`unknown scenario ${name}; known: ${Object.keys(scenarios).join(', ')}`);
  const dev = await startDevServer();
  const cli = resolveTemporalCli();
  if (cli.type !== 'existing-path') throw new Error('the capture needs the Temporal CLI binary (scripts/install-temporal.sh)');
  const database = await createTestDatabase();
  const rest = await startRestWorker();
  const config = loadConfig(
    {},
    {
      'pipeline.store.url': database.url,
      'pipeline.temporal.address': dev.address,
      'pipeline.temporal.task-queue': `capture-${randomBytes(4).toString('hex')}`,
      'pipeline.auth.tokens': [{ sha256: createHash('sha256').update(TOKEN).digest('hex'), role: 'admin' }],
      'pipeline.defaults.retry-wait-ms': 50,
      'pipeline.defaults.max-backoff': 200,
      'pipeline.sweeper.interval': '500ms',
      // The redrive-job-yield scenario's path (off by default): the other job scenarios take it too when re-captured.
      'pipeline.redrive-job.yield-to-live': true,
    },
  );
  const service = await startService({ config, log: createLog({ level: 'warn' }), pipelines: pipelines(rest.base), http: false });
  const prefix = `/${config['pipeline.admin.prefix']}`;
  const capture: Capture = {
    service,
    async request(method, path, body) {
      const res = await service.app.request(`${prefix}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Record<string, any>;
      if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    },
    async waitFor(executionId, statuses) {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const record = await service.store.get(TENANT, executionId);
        if (record && statuses.includes(record.status)) return record as unknown as Record<string, any>;
        if (Date.now() > deadline) throw new Error(`execution ${executionId} is ${record?.status ?? 'missing'}, not ${statuses.join('|')}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async save(name, executionId, runId) {
      if (!runId) throw new Error(`${name}: no runId (the start went to the sweeper); run the capture again`);
      await capture.saveWorkflow(name, workflowIdFor(TENANT, executionId), runId);
    },
    temporal(...args) {
      return execFileSync(cli.path, [...args, '--address', dev.address, '--namespace', 'default'], { encoding: 'utf8' });
    },
    async saveWorkflow(name, workflowId, runId) {
      const handle = service.client.workflow.getHandle(workflowId, runId);
      await handle.result().catch(() => undefined);
      runId ??= (await handle.describe()).runId;
      // The CLI's JSON is the format Temporal documents for replay (historyFromJSON reads it).
      const json = execFileSync(
        cli.path,
        ['workflow', 'show', '--address', dev.address, '--namespace', 'default', '--workflow-id', handle.workflowId, '--run-id', runId, '--output', 'json'],
        { encoding: 'utf8' },
      );
      const history = JSON.parse(json) as { events: unknown[] };
      writeFileSync(join(OUT, `${name}.json`), `${JSON.stringify(history, null, 1)}\n`);
      console.log(`captured ${name} (${history.events.length} events)`);
    },
  };
  mkdirSync(OUT, { recursive: true });
  try {
    for (const [name, run] of Object.entries(scenarios)) if (wanted.length === 0 || wanted.includes(name)) await run(capture);
  } finally {
    await service.stop();
    await rest.close();
    await database.drop();
    await dev.stop();
  }
}

await main();
