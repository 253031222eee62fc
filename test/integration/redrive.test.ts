/**
 * The admin re-drive endpoint against the real dev server and Postgres: every admission
 * check in order (status, code, and nothing changed on rejection), the accepted paths end
 * to end (FAILED, RETRY_FAILED_COMMAND, REMOTE_OUTCOME_UNKNOWN through a real REST deadline,
 * ordinary replay of a run really lost), concurrency on expectedVersion, and the sweeper
 * after a failed start. States no engine path reaches come from unreachable-states.ts.
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EffectList, RedriveAcceptedSchema, RedrivePreviewSchema } from '../../src/contract/responses';
import { definePipeline, localStep, restStep } from '../../src/pipeline/define';
import type { RetryOverride } from '../../src/retry';
import { startTestEngine, TENANT_A_TOKEN, type TestEngine } from '../helpers/engine';
import { Gates, until } from '../helpers/until';
import { forgetFailedStepIndex, setRetainedEffect, stallAfterEffect } from '../helpers/unreachable-states';
import { scaled } from '../helpers/time-scale';

let engine: TestEngine;

/** Executions whose failing steps should fail right now; tests clear them to let a re-drive succeed. */
const failing = new Set<string>();
/** Invocations per `executionId/step`, with the transition keys seen. */
const calls: Record<string, string[]> = {};
const record = (step: string, ctx: { executionId: string; transitionKey: string }) => (calls[`${ctx.executionId}/${step}`] ??= []).push(ctx.transitionKey);
/** The 'slow' pipeline's first step waits at its execution's gate until the test opens it. */
const gates = new Gates();

const pass = (name: string) =>
  localStep(name, (input: unknown, ctx) => {
    record(name, ctx);
    return input ?? {};
  });
const flaky = (name: string, command: boolean, retry: RetryOverride = { limit: 1 }) =>
  localStep(
    name,
    (input: unknown, ctx) => {
      record(name, ctx);
      if (failing.has(ctx.executionId)) throw Object.assign(new Error('downstream unavailable'), { code: 'DOWNSTREAM_DOWN' });
      return { ...(input as object), [name]: ctx.attempt };
    },
    { command, retry },
  );

/** The remote step's deadline: stretched on a loaded machine, so an attempt the worker answers at once is never late. */
const STEP_DEADLINE_MS = scaled(500);

/** A REST transition worker that answers every attempt but the first, which it holds past the caller's deadline. */
let worker: ServerType;
async function startRestWorker(): Promise<string> {
  const app = new Hono();
  app.post('/charge', async (c) => {
    const key = c.req.header('idempotency-key') ?? '';
    const [executionId] = key.replace(/^[^/]*\//, '').split(':');
    record('charge', { executionId, transitionKey: key.replace(/^[^/]*\//, '') });
    if (key.endsWith(':1')) await new Promise((resolve) => setTimeout(resolve, STEP_DEADLINE_MS * 5));
    return c.json({ charged: true });
  });
  worker = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => worker.once('listening', resolve));
  return `http://127.0.0.1:${(worker.address() as { port: number }).port}`;
}

const pipelines = (restBase: string) => [
  definePipeline({ name: 'plain', steps: [pass('a'), flaky('b', false), pass('c')] }),
  definePipeline({ name: 'command', steps: [pass('prepare'), flaky('charge', true), pass('finish')] }),
  // A retry that waits long enough for the test to lose the run in between.
  definePipeline({
    name: 'command-slow-retry',
    steps: [pass('prepare'), flaky('charge', true, { limit: 1, waitMs: 600_000, maxBackoffMs: 600_000 }), pass('finish')],
  }),
  // The same three on the fast path (docs/decisions.md): each LOCAL step a local activity.
  definePipeline({ name: 'plain-fast', fastPath: true, steps: [pass('a'), flaky('b', false), pass('c')] }),
  definePipeline({ name: 'command-fast', fastPath: true, steps: [pass('prepare'), flaky('charge', true), pass('finish')] }),
  definePipeline({
    name: 'command-slow-retry-fast',
    fastPath: true,
    steps: [pass('prepare'), flaky('charge', true, { limit: 1, waitMs: 600_000, maxBackoffMs: 600_000 }), pass('finish')],
  }),
  definePipeline({
    name: 'remote',
    steps: [pass('prepare'), restStep('charge', { url: `${restBase}/charge` }, { command: true, timeoutMs: STEP_DEADLINE_MS }), pass('finish')],
  }),
  definePipeline({
    name: 'slow',
    steps: [
      localStep('wait', async (_input: unknown, ctx) => {
        record('wait', ctx);
        await gates.wait(ctx.executionId, ctx.signal);
        return {};
      }),
      pass('after'),
    ],
  }),
];

const redrive = (
  executionId: string,
  body: unknown,
  options: { token?: string | null; query?: string; headers?: Record<string, string>; tenant?: string } = {},
) =>
  engine.request('POST', `/admin/tenants/${options.tenant ?? 'tenant-a'}/executions/${executionId}/redrive${options.query ?? ''}`, {
    body,
    token: options.token,
    headers: options.headers,
  });

/** Everything a re-drive could touch for one execution. */
async function snapshot(executionId: string) {
  const q = async (sql: string) => (await engine.service.db.query(sql, ['tenant-a', executionId])).rows;
  return {
    record: await q('SELECT * FROM execution_record WHERE tenant_id = $1 AND execution_id = $2'),
    effects: await q('SELECT * FROM command_effect WHERE tenant_id = $1 AND execution_id = $2 ORDER BY step_index'),
    dlq: await q('SELECT id, envelope FROM execution_dlq WHERE tenant_id = $1 AND execution_id = $2 ORDER BY id'),
    audit: await q('SELECT redrive_id FROM redrive_audit WHERE tenant_id = $1 AND execution_id = $2'),
    dispatch: await q('SELECT dispatch_id, status FROM execution_dispatch WHERE tenant_id = $1 AND execution_id = $2 ORDER BY created_at'),
  };
}

/**
 * The re-drive tests of LOCAL steps run on both paths: each step a regular activity, and on the
 * fast path (the `-fast` twin of the pipeline; the execution ids end in `-fast` too).
 */
const PATHS = [
  { path: 'regular activities', fastPath: false },
  { path: 'the fast path', fastPath: true },
];
const onPath = <T extends string>(name: T, fastPath: boolean) => (fastPath ? (`${name}-fast` as const) : name);

async function failedExecution(pipeline: 'plain' | 'command' | 'plain-fast' | 'command-fast', executionId: string) {
  failing.add(executionId);
  await engine.start('tenant-a', { pipeline, executionId, input: { n: 1 } });
  const failed = await engine.waitFor('tenant-a', executionId, ['FAILED']);
  // The run closes one workflow task after the record commits FAILED.
  await engine.service.client.workflow
    .getHandle(failed.workflowId)
    .result()
    .catch(() => undefined);
  return failed;
}

/** Parked for real: the REST call's first attempt passes its deadline (STEP_DEADLINE_MS). */
async function parkedExecution(executionId: string) {
  await engine.start('tenant-a', { pipeline: 'remote', executionId, input: { n: 1 } });
  const parked = await engine.waitFor('tenant-a', executionId, ['REMOTE_OUTCOME_UNKNOWN']);
  await engine.service.client.workflow
    .getHandle(parked.workflowId)
    .result()
    .catch(() => undefined);
  return parked;
}

/**
 * The run is gone from Temporal (deleted, as an operator or the namespace's retention does):
 * nothing carries the execution on, and no watch ends it, so its record stalls as it was. (A run
 * terminated or cancelled instead ends its record FAILED: test/e2e/temporal-ui-buttons.test.ts.)
 */
async function loseRun(workflowId: string) {
  const { client } = engine.service;
  const { runId } = await client.workflow.getHandle(workflowId).describe();
  await client.workflowService.deleteWorkflowExecution({ namespace: client.options.namespace, workflowExecution: { workflowId, runId } });
  await until(
    () =>
      client.workflow
        .getHandle(workflowId)
        .describe()
        .then(
          () => false,
          (err) => err instanceof WorkflowNotFoundError,
        ),
    30_000,
    'the run to be deleted',
  );
}

/** Stalled for real: the Command step failed once and waits out a long retry; the run is then lost (deleted). */
async function stalledAtCommand(executionId: string, fastPath = false) {
  failing.add(executionId);
  await engine.start('tenant-a', { pipeline: onPath('command-slow-retry', fastPath), executionId, input: { n: 1 } });
  await until(
    async () => (await engine.effects.get('tenant-a', executionId, 1))?.status === 'FAILED_RETRYABLE',
    30_000,
    'the first failure of the Command step',
  );
  const waiting = (await engine.service.store.get('tenant-a', executionId))!;
  await loseRun(waiting.workflowId);
  return (await engine.service.store.get('tenant-a', executionId))!;
}

async function expectRejected(executionId: string, body: unknown, status: number, code: string, options: Parameters<typeof redrive>[2] = {}) {
  const before = await snapshot(executionId);
  const res = await redrive(executionId, body, options);
  const problem = await res.json();
  expect({ status: res.status, code: problem.code }).toEqual({ status, code });
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  expect(await snapshot(executionId)).toEqual(before);
  return problem;
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines(await startRestWorker()));
});
afterAll(async () => {
  gates.openAll();
  await engine?.stop();
  worker?.close();
});

describe('re-drive checks, in order (who, body, lookup, version, state); a rejection changes nothing', () => {
  let failed: Awaited<ReturnType<typeof failedExecution>>;
  const ok = () => ({ expectedVersion: failed.version, reason: 'dependency restored', allowFailed: true });
  beforeAll(async () => {
    failed = await failedExecution('plain', 'checks-1');
  });

  it('who: answers 401 without a valid token, 403 for another tenant', async () => {
    const res = await redrive('checks-1', ok(), { token: null });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    await expectRejected('checks-1', ok(), 401, 'UNAUTHORIZED', { token: null });
    await expectRejected('checks-1', ok(), 401, 'UNAUTHORIZED', { token: 'not-a-token' });
    const other = await redrive('checks-1', ok(), { token: TENANT_A_TOKEN, tenant: 'tenant-b' });
    expect([other.status, (await other.json()).code]).toEqual([403, 'FORBIDDEN']);
  });

  it('body: answers 415, 413 and 400 for bad bodies, and 400 for intent without allowFailed=true', async () => {
    await expectRejected('checks-1', JSON.stringify(ok()), 415, 'UNSUPPORTED_MEDIA_TYPE', { headers: { 'content-type': 'text/plain' } });
    await expectRejected('checks-1', { ...ok(), reason: 'x'.repeat(70_000) }, 413, 'BODY_TOO_LARGE');
    await expectRejected('checks-1', '{"expectedVersion":', 400, 'INVALID_JSON');
    await expectRejected('checks-1', { expectedVersion: failed.version, allowFailed: true }, 400, 'VALIDATION_FAILED');
    await expectRejected('checks-1', { ...ok(), expectedVersion: '7' }, 400, 'VALIDATION_FAILED');
    await expectRejected('checks-1', { ...ok(), extra: true }, 400, 'VALIDATION_FAILED');
    await expectRejected('checks-1', { ...ok(), intent: 'DELETE_EVERYTHING' }, 400, 'VALIDATION_FAILED');
    const problem = await expectRejected('checks-1', { ...ok(), allowFailed: false, intent: 'RETRY_FAILED_COMMAND' }, 400, 'VALIDATION_FAILED');
    expect(problem.issues).toEqual([expect.objectContaining({ path: 'intent' })]);
  });

  it("lookup: answers 404 alike for an unknown execution and for another tenant's", async () => {
    await expectRejected('nowhere-1', ok(), 404, 'EXECUTION_NOT_FOUND');
    const res = await redrive('checks-1', ok(), { tenant: 'tenant-b' });
    expect([res.status, (await res.json()).code]).toEqual([404, 'EXECUTION_NOT_FOUND']);
  });

  it('version: answers 409 VERSION_MISMATCH with the current version', async () => {
    const problem = await expectRejected('checks-1', { ...ok(), expectedVersion: failed.version - 1 }, 409, 'VERSION_MISMATCH');
    expect(problem.currentVersion).toBe(failed.version);
  });

  it('state: answers 409 ALLOW_FAILED_REQUIRED for a FAILED execution with allowFailed=false', async () => {
    await expectRejected('checks-1', { ...ok(), allowFailed: false }, 409, 'ALLOW_FAILED_REQUIRED');
  });

  it('state: answers 409 EXECUTION_ACTIVE while a run is active', async () => {
    const started = await engine.start('tenant-a', { pipeline: 'slow', executionId: 'active-1' });
    await engine.waitFor('tenant-a', 'active-1', ['RUNNING']);
    const current = await engine.service.store.get('tenant-a', 'active-1');
    await expectRejected('active-1', { expectedVersion: current!.version, reason: 'r', allowFailed: false }, 409, 'EXECUTION_ACTIVE');
    gates.open('active-1');
    expect(started.executionId).toBe('active-1');
    await engine.waitFor('tenant-a', 'active-1', ['SUCCEEDED']);
  });

  it('state: answers 409 EXECUTION_SUCCEEDED for a SUCCEEDED execution, with or without intent', async () => {
    await engine.start('tenant-a', { pipeline: 'plain', executionId: 'succeeded-1' });
    const done = await engine.waitFor('tenant-a', 'succeeded-1', ['SUCCEEDED']);
    await expectRejected('succeeded-1', { expectedVersion: done.version, reason: 'r', allowFailed: true }, 409, 'EXECUTION_SUCCEEDED');
    await expectRejected(
      'succeeded-1',
      { expectedVersion: done.version, reason: 'r', allowFailed: true, intent: 'RETRY_FAILED_COMMAND' },
      409,
      'EXECUTION_SUCCEEDED',
    );
  });

  it('state: answers 409 RETRY_FAILED_COMMAND_INTENT_REQUIRED when the failed Command step keeps its effect', async () => {
    const cmd = await failedExecution('command', 'checks-cmd');
    expect((await engine.effects.get('tenant-a', 'checks-cmd', 1))?.status).toBe('FAILED_RETRYABLE');
    await expectRejected('checks-cmd', { expectedVersion: cmd.version, reason: 'r', allowFailed: true }, 409, 'RETRY_FAILED_COMMAND_INTENT_REQUIRED');
  });

  it('state: answers 409 COMMAND_EFFECT_NOT_REDISPATCHABLE (and says so in the dry run) when the retained effect is not FAILED_RETRYABLE', async () => {
    const cmd = await failedExecution('command', 'checks-effect');
    const body = { expectedVersion: cmd.version, reason: 'r', allowFailed: true, intent: 'RETRY_FAILED_COMMAND' };
    for (const status of ['FAILED_TERMINAL', 'IN_FLIGHT', 'SUCCEEDED']) {
      await setRetainedEffect(engine.service.db, 'tenant-a', 'checks-effect', status as 'FAILED_TERMINAL' | 'IN_FLIGHT' | 'SUCCEEDED');
      const problem = await expectRejected('checks-effect', body, 409, 'COMMAND_EFFECT_NOT_REDISPATCHABLE');
      expect(problem.effectStatus).toBe(status);
      const preview = await (await redrive('checks-effect', body, { query: '?dryRun=true' })).json();
      expect(preview).toMatchObject({ admitted: false, status: 409, code: 'COMMAND_EFFECT_NOT_REDISPATCHABLE', effectStatus: status });
    }
    expect(calls['checks-effect/charge']).toHaveLength(2); // the first attempt and its one retry; never the re-drive
  });

  it('state: answers 422 FAILED_STEP_NOT_RETAINED when the failed step index is gone', async () => {
    const gone = await failedExecution('plain', 'checks-noindex');
    await forgetFailedStepIndex(engine.service.db, 'tenant-a', 'checks-noindex');
    await expectRejected(
      'checks-noindex',
      { expectedVersion: gone.version, reason: 'r', allowFailed: true, intent: 'RETRY_FAILED_COMMAND' },
      422,
      'FAILED_STEP_NOT_RETAINED',
    );
  });

  it('re-drives a FAILED execution that lost its failed step index from the step it stands at (no 500)', async () => {
    failing.delete('checks-noindex');
    const current = (await engine.service.store.get('tenant-a', 'checks-noindex'))!;
    const res = await redrive('checks-noindex', { expectedVersion: current.version, reason: 'r', allowFailed: true });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ resumeStepIndex: 1 });
    expect((await engine.waitFor('tenant-a', 'checks-noindex', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
  });

  it('state: REMOTE_OUTCOME_UNKNOWN: 409 without allowFailed, 409 without a confirmed disposition, 422 with the intent', async () => {
    const parked = await parkedExecution('checks-rou');
    expect((await engine.effects.get('tenant-a', 'checks-rou', 1))?.status).toBe('AMBIGUOUS');
    const base = { expectedVersion: parked.version, reason: 'worker checked' };
    await expectRejected('checks-rou', { ...base, allowFailed: false }, 409, 'ALLOW_FAILED_REQUIRED');
    await expectRejected('checks-rou', { ...base, allowFailed: true }, 409, 'DISPOSITION_UNCONFIRMED');
    await expectRejected('checks-rou', { ...base, allowFailed: true, intent: 'RETRY_FAILED_COMMAND' }, 422, 'EXECUTION_NOT_FAILED');
  });

  it('dryRun answers checks 3-5 as a 200 preview and changes nothing', async () => {
    const before = await snapshot('checks-1');
    const admitted = await redrive('checks-1', ok(), { query: '?dryRun=true' });
    expect(admitted.status).toBe(200);
    expect(await admitted.json()).toMatchObject({
      admitted: true,
      version: failed.version + 1,
      status: 'QUEUED',
      resumeStepIndex: 1,
      attempt: 3,
      mode: 'FAILED',
    });
    const refused = await redrive('checks-1', { ...ok(), expectedVersion: 1 }, { query: '?dryRun=true' });
    expect(refused.status).toBe(200);
    expect(await refused.json()).toMatchObject({ admitted: false, status: 409, code: 'VERSION_MISMATCH', currentVersion: failed.version });
    const cmd = await failedExecution('command', 'preview-cmd');
    const preview = await (
      await redrive('preview-cmd', { expectedVersion: cmd.version, reason: 'r', allowFailed: true, intent: 'RETRY_FAILED_COMMAND' }, { query: '?dryRun=true' })
    ).json();
    expect(preview).toMatchObject({ admitted: true, mode: 'RETRY_FAILED_COMMAND', effectStatus: 'FAILED_RETRYABLE' });
    RedrivePreviewSchema.parse(preview);
    // Auth and body errors answer as usual under dryRun.
    expect((await redrive('checks-1', { reason: 'r' }, { query: '?dryRun=true' })).status).toBe(400);
    expect((await redrive('checks-1', ok(), { query: '?dryRun=true', token: null })).status).toBe(401);
    expect(await snapshot('checks-1')).toEqual(before);
  });
});

describe('accepted re-drives', () => {
  it.each(PATHS)(
    're-drives a FAILED execution with allowFailed=true: a new run of the same workflowId, a new attempt, the DLQ untouched, $path',
    async ({ fastPath }) => {
      const id = onPath('redrive-1', fastPath);
      const failed = await failedExecution(onPath('plain', fastPath), id);
      expect(calls[`${id}/b`]).toEqual([`${id}:1:1`, `${id}:1:2`]);
      const envelopes = await snapshot(id);
      failing.delete(id);
      const res = await redrive(id, { expectedVersion: failed.version, reason: 'dependency restored', allowFailed: true });
      expect(res.status).toBe(202);
      const accepted = RedriveAcceptedSchema.strict().parse(await res.json());
      expect(accepted).toMatchObject({
        tenantId: 'tenant-a',
        executionId: id,
        version: failed.version + 1,
        status: 'QUEUED',
        resumeStepIndex: 1,
        attempt: 3,
        dispatch: 'started',
        redriveId: expect.any(String),
        runId: expect.any(String),
      });
      const done = await engine.waitFor('tenant-a', id, ['SUCCEEDED', 'FAILED']);
      expect(done).toMatchObject({ status: 'SUCCEEDED', redriveCount: 1 });
      expect(calls[`${id}/b`]).toEqual([`${id}:1:1`, `${id}:1:2`, `${id}:1:3`]);
      expect(calls[`${id}/a`]).toHaveLength(1);
      await engine.service.client.workflow.getHandle(done.workflowId, accepted.runId ?? undefined).result();
      const runs = await engine.runsOf('tenant-a', id, 2);
      expect(runs.map((r) => r.status)).toEqual(['FAILED', 'COMPLETED']);
      expect(runs[1].runId).toBe(accepted.runId);
      const after = await snapshot(id);
      expect(after.dlq).toEqual(envelopes.dlq);
      const listed = await (await engine.request('GET', '/admin/tenants/tenant-a/dlq')).json();
      expect(listed.items.find((i: any) => i.envelope.executionId === id)).toMatchObject({ redriven: true });
      expect(after.audit).toHaveLength(1);
    },
  );

  it('starts a re-drive sent the moment the record reads FAILED, while the old run is still closing', async () => {
    failing.add('eager-1');
    await engine.start('tenant-a', { pipeline: 'plain', executionId: 'eager-1' });
    const failed = await engine.waitFor('tenant-a', 'eager-1', ['FAILED']);
    failing.delete('eager-1');
    const res = await redrive('eager-1', { expectedVersion: failed.version, reason: 'right away', allowFailed: true });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ dispatch: 'started', runId: expect.any(String) });
    expect((await engine.waitFor('tenant-a', 'eager-1', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
  });

  it.each(PATHS)(
    'retries a FAILED_RETRYABLE Command once more with RETRY_FAILED_COMMAND, then refuses a second re-drive of the SUCCEEDED execution, $path',
    async ({ fastPath }) => {
      const id = onPath('cmd-1', fastPath);
      const failed = await failedExecution(onPath('command', fastPath), id);
      expect(calls[`${id}/charge`]).toHaveLength(2);
      expect(await engine.effects.get('tenant-a', id, 1)).toMatchObject({ status: 'FAILED_RETRYABLE', transitionKey: `${id}:1:2` });
      failing.delete(id);
      const body = { expectedVersion: failed.version, reason: 'card network back', allowFailed: true, intent: 'RETRY_FAILED_COMMAND' };
      expect((await redrive(id, body)).status).toBe(202);
      const done = await engine.waitFor('tenant-a', id, ['SUCCEEDED', 'FAILED']);
      expect(done.status).toBe('SUCCEEDED');
      expect(calls[`${id}/charge`]).toEqual([`${id}:1:1`, `${id}:1:2`, `${id}:1:3`]);
      expect(await engine.effects.get('tenant-a', id, 1)).toMatchObject({ status: 'SUCCEEDED', attempt: 3, transitionKey: `${id}:1:3` });
      const listed = EffectList.parse(await (await engine.request('GET', `/admin/tenants/tenant-a/executions/${id}/effects`)).json());
      expect(listed.items).toMatchObject([{ stepName: 'charge', status: 'SUCCEEDED', transitionKey: `${id}:1:3`, hasResult: true }]);
      await expectRejected(id, { ...body, expectedVersion: done.version }, 409, 'EXECUTION_SUCCEEDED');
    },
  );

  it.each(PATHS)(
    'releases a Command effect stuck IN_FLIGHT only on an attested RETRY_FAILED_COMMAND, and runs the step once more, $path',
    async ({ fastPath }) => {
      const id = onPath('inflight-1', fastPath);
      const failed = await failedExecution(onPath('command', fastPath), id);
      failing.delete(id);
      // What a call abandoned after a worker's death leaves behind.
      await setRetainedEffect(engine.service.db, 'tenant-a', id, 'IN_FLIGHT');
      const body = {
        expectedVersion: failed.version,
        reason: 'worker died mid-call; checked downstream: no charge',
        allowFailed: true,
        intent: 'RETRY_FAILED_COMMAND',
      };
      const refused = await expectRejected(id, body, 409, 'COMMAND_EFFECT_NOT_REDISPATCHABLE');
      expect(refused.detail).toContain('confirmedDisposition');
      const res = await redrive(id, { ...body, confirmedDisposition: 'NOT_APPLIED' });
      expect(res.status).toBe(202);
      expect((await engine.waitFor('tenant-a', id, ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
      expect(calls[`${id}/charge`]).toHaveLength(3);
      expect((await engine.effects.get('tenant-a', id, 1))?.status).toBe('SUCCEEDED');
      const audit = await engine.service.db.query('SELECT confirmed_disposition FROM redrive_audit WHERE execution_id = $1', [id]);
      expect(audit.rows).toEqual([{ confirmed_disposition: 'NOT_APPLIED' }]);
    },
  );

  it.each(PATHS)('fails a RETRY_FAILED_COMMAND re-drive of a non-Command step before its operator is invoked, $path', async ({ fastPath }) => {
    const id = onPath('notcmd-1', fastPath);
    const failed = await failedExecution(onPath('plain', fastPath), id);
    const invocations = calls[`${id}/b`].length;
    failing.delete(id);
    expect((await redrive(id, { expectedVersion: failed.version, reason: 'r', allowFailed: true, intent: 'RETRY_FAILED_COMMAND' })).status).toBe(202);
    const current = () => engine.service.store.get('tenant-a', id);
    await until(async () => (await current())?.lastErrorCode === 'RETRY_INTENT_NOT_A_COMMAND', 15_000, 'the re-driven run to fail');
    expect(await engine.runsOf('tenant-a', id, 2)).toHaveLength(2);
    expect(await current()).toMatchObject({
      status: 'FAILED',
      terminalReason: 'non_retryable',
      lastErrorCode: 'RETRY_INTENT_NOT_A_COMMAND',
      failedStepIndex: 1,
    });
    expect(calls[`${id}/b`]).toHaveLength(invocations);
  });

  it('re-drives a confirmed REMOTE_OUTCOME_UNKNOWN: the AMBIGUOUS effect becomes retryable and the step runs with a new attempt', async () => {
    const parked = await parkedExecution('rou-1');
    expect((await engine.effects.get('tenant-a', 'rou-1', 1))?.status).toBe('AMBIGUOUS');
    const res = await redrive('rou-1', {
      expectedVersion: parked.version,
      reason: 'worker log shows no call',
      allowFailed: true,
      confirmedDisposition: 'NOT_APPLIED',
    });
    expect(res.status).toBe(202);
    expect((await engine.waitFor('tenant-a', 'rou-1', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
    expect(calls['rou-1/charge']).toEqual(['rou-1:1:1', 'rou-1:1:2']);
    expect((await engine.effects.get('tenant-a', 'rou-1', 1))?.status).toBe('SUCCEEDED');
    const audit = await engine.service.db.query("SELECT confirmed_disposition, mode, principal FROM redrive_audit WHERE execution_id = 'rou-1'");
    expect(audit.rows).toEqual([{ confirmed_disposition: 'NOT_APPLIED', mode: 'REMOTE_OUTCOME_UNKNOWN', principal: 'test-admin' }]);
  });

  // Regular activities only: on the fast path a deleted run's workflow task carries on in its worker
  // (the next step is a local activity of the same task), so deleting the run need not stall it.
  it('replays a stalled RUNNING execution whose run is gone (allowFailed=false) from its first uncommitted step', async () => {
    await engine.start('tenant-a', { pipeline: 'slow', executionId: 'stalled-1' });
    const running = await engine.waitFor('tenant-a', 'stalled-1', ['RUNNING']);
    await loseRun(running.workflowId);
    // Deleting a run does not stop its in-flight activity: it finishes and commits step 0
    // (a truthful commit, guarded by step and attempt). The execution then sits RUNNING at
    // step 1 with no run: stalled.
    gates.open('stalled-1');
    await until(async () => (await engine.service.store.get('tenant-a', 'stalled-1'))!.currentStepIndex === 1, 15_000, 'the orphaned activity to commit');
    const stalled = (await engine.service.store.get('tenant-a', 'stalled-1'))!;
    expect(stalled).toMatchObject({ status: 'RUNNING', currentStepIndex: 1, attempt: 1 });
    await expectRejected('stalled-1', { expectedVersion: running.version, reason: 'run lost', allowFailed: false }, 409, 'VERSION_MISMATCH');
    const res = await redrive('stalled-1', { expectedVersion: stalled.version, reason: 'run lost', allowFailed: false });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ resumeStepIndex: 1, attempt: 2 });
    expect((await engine.waitFor('tenant-a', 'stalled-1', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
    expect(calls['stalled-1/wait']).toEqual(['stalled-1:0:1']);
    expect(calls['stalled-1/after']).toEqual(['stalled-1:1:2']);
  });

  it.each(PATHS)('never redispatches a retained Command effect on ordinary replay, $path', async ({ fastPath }) => {
    const id = onPath('ordinary-cmd', fastPath);
    // Stalled at the Command step: RUNNING, no run, the effect retained as FAILED_RETRYABLE.
    const failed = await stalledAtCommand(id, fastPath);
    expect(failed).toMatchObject({ status: 'RUNNING', currentStepIndex: 1 });
    failing.delete(id);
    const invocations = calls[`${id}/charge`].length;
    expect((await redrive(id, { expectedVersion: failed.version, reason: 'replay', allowFailed: false })).status).toBe(202);
    const current = await engine.waitFor('tenant-a', id, ['FAILED']);
    expect(current).toMatchObject({ terminalReason: 'non_retryable', lastErrorCode: 'COMMAND_EFFECT_NOT_REDISPATCHABLE' });
    expect(calls[`${id}/charge`]).toHaveLength(invocations);
    expect((await engine.effects.get('tenant-a', id, 1))?.status).toBe('FAILED_RETRYABLE');
  });

  it.each(PATHS)("reuses a SUCCEEDED effect's stored result on ordinary replay instead of invoking again, $path", async ({ fastPath }) => {
    const id = onPath('reuse-1', fastPath);
    const failed = await failedExecution(onPath('command', fastPath), id);
    // Stalled just after the effect happened: the effect holds its result, the record never moved past the step.
    await stallAfterEffect(engine.service.db, 'tenant-a', id, { charged: true });
    const invocations = calls[`${id}/charge`].length;
    const succeededBefore = (await engine.service.metrics.succeeded.get()).values[0]?.value ?? 0;
    expect((await redrive(id, { expectedVersion: failed.version, reason: 'replay', allowFailed: false })).status).toBe(202);
    const done = await engine.waitFor('tenant-a', id, ['SUCCEEDED', 'FAILED']);
    expect(done.status).toBe('SUCCEEDED');
    expect(done.segmentInput).toEqual({ charged: true });
    expect(calls[`${id}/charge`]).toHaveLength(invocations);
    expect(calls[`${id}/finish`]).toEqual([`${id}:2:1`]);
    expect((await engine.service.metrics.succeeded.get()).values[0].value).toBe(succeededBefore + 1);
  });

  it('admits exactly one of 50 concurrent re-drives with the same expectedVersion', async () => {
    const failed = await failedExecution('plain', 'race-1');
    failing.delete('race-1');
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => redrive('race-1', { expectedVersion: failed.version, reason: 'race', allowFailed: true })),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(49);
    const codes = await Promise.all(responses.filter((r) => r.status === 409).map(async (r) => (await r.json()).code));
    expect(new Set(codes)).toEqual(new Set(['VERSION_MISMATCH']));
    await engine.waitFor('tenant-a', 'race-1', ['SUCCEEDED']);
    expect(await engine.runsOf('tenant-a', 'race-1', 2)).toHaveLength(2);
    const audit = await engine.service.db.query("SELECT count(*)::int AS n FROM redrive_audit WHERE execution_id = 'race-1'");
    expect(audit.rows[0].n).toBe(1);
  });

  it('starts a re-drive whose Temporal start failed from the sweeper, exactly once', async () => {
    const failed = await failedExecution('plain', 'sweep-1');
    failing.delete('sweep-1');
    let refusals = 0;
    engine.service.dispatcher.beforeStart = (_tenant, executionId) => {
      if (executionId === 'sweep-1' && refusals++ === 0) throw new Error('injected: Temporal unreachable');
    };
    try {
      const res = await redrive('sweep-1', { expectedVersion: failed.version, reason: 'r', allowFailed: true });
      expect(res.status).toBe(202);
      expect(await res.json()).toMatchObject({ dispatch: 'pending', runId: null, status: 'QUEUED' });
      expect((await engine.waitFor('tenant-a', 'sweep-1', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
    } finally {
      engine.service.dispatcher.beforeStart = undefined;
    }
    expect(refusals).toBe(2);
    expect(engine.logs.some((l) => l.event === 'execution_dispatch_swept' && l.executionId === 'sweep-1')).toBe(true);
    // A later sweep starts nothing more: run one and count.
    expect(await engine.service.dispatcher.sweepOnce()).toBe(0);
    expect(await engine.runsOf('tenant-a', 'sweep-1', 2)).toHaveLength(2);
    const dispatch = await engine.service.db.query("SELECT status FROM execution_dispatch WHERE execution_id = 'sweep-1' ORDER BY created_at");
    expect(dispatch.rows.map((r) => r.status)).toEqual(['STARTED', 'STARTED']);
  });
});
