/**
 * The background path against the real dev server and real Postgres: success,
 * retries with backoff and committed retry intent, exhaustion, retry-limit 0,
 * non-retryable failures, bad operator output, and what the Temporal UI shows. Run on both
 * paths: each step a regular activity, and on the fast path (pipeline.orchestrator.fast-path:
 * each LOCAL/FUNCTION step a local activity, the same commits and the same transition identities).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { definePipeline, functionStep, localStep, NonRetryableException, type StepContext } from '../../src/pipeline/define';
import { PipelineExecutionId, PipelineName, PipelineStatus, PipelineTenant } from '../../src/workflows/search-attributes';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { scaled } from '../helpers/time-scale';

/** Every invocation an operator saw, by step name: transition key and time. */
const seen: Record<string, { key: string; at: number; recordAttempt?: number; nextDueAt?: string | null }[]> = {};
function note(step: string, ctx: StepContext, extra: Record<string, unknown> = {}) {
  (seen[step] ??= []).push({ key: ctx.transitionKey, at: Date.now(), ...extra });
}
const keysOf = (step: string) => (seen[step] ?? []).map((entry) => entry.key);

let engine: TestEngine;

const passThrough = (name: string) =>
  localStep(name, (input: { trail?: string[] } | null, ctx) => {
    note(`${ctx.executionId}/${name}`, ctx);
    return { ...input, trail: [...(input?.trail ?? []), name] };
  });

const pipelines = [
  definePipeline({ name: 'three', steps: [passThrough('a'), passThrough('b'), passThrough('c')] }),
  definePipeline({
    name: 'flaky-last',
    steps: [
      passThrough('a'),
      localStep(
        'flaky',
        async (input: { failTimes: number }, ctx) => {
          const record = await engine.service.store.get(ctx.tenantId, ctx.executionId);
          note(`${ctx.executionId}/flaky`, ctx, { recordAttempt: record?.attempt, nextDueAt: record?.nextDueAt });
          if (ctx.attempt <= input.failTimes) throw Object.assign(new Error('dependency unavailable'), { code: 'DEPENDENCY_DOWN' });
          return { done: true };
        },
        { retry: { limit: 5, waitMs: 200, maxBackoffMs: 300, jitter: false } },
      ),
    ],
  }),
  definePipeline({
    name: 'always-failing',
    retry: { limit: 2 },
    steps: [
      passThrough('a'),
      localStep('broken', (_input: unknown, ctx) => {
        note(`${ctx.executionId}/broken`, ctx);
        throw Object.assign(new Error('still down'), { code: 'DEPENDENCY_DOWN' });
      }),
      passThrough('never'),
    ],
  }),
  definePipeline({
    name: 'no-retries',
    retry: { limit: 0 },
    steps: [
      localStep('once', (_input: unknown, ctx) => {
        note(`${ctx.executionId}/once`, ctx);
        throw new Error('flaky');
      }),
    ],
  }),
  definePipeline({
    name: 'rejects-payload',
    steps: [
      functionStep('validate', (_event: unknown, context) => {
        (seen[`${context.executionId}/validate`] ??= []).push({ key: context.invocationId, at: Date.now() });
        throw new NonRetryableException('amount must be positive', 'INVALID_AMOUNT');
      }),
    ],
  }),
  definePipeline({
    name: 'bad-output',
    steps: [
      // @ts-expect-error a bigint output is a compile error; this pipeline proves the run-time check behind it
      localStep('bigint', (_input: unknown, ctx) => {
        note(`${ctx.executionId}/bigint`, ctx);
        return { amount: 10n };
      }),
    ],
  }),
];

describe.each([
  { path: 'regular activities', fastPath: false },
  { path: 'the fast path (local activities)', fastPath: true },
])('execution engine, $path', ({ fastPath }) => {
  // Both blocks share the dev server: each its own tenant (and so workflow ids).
  const tenant = fastPath ? 'acme-fast' : 'acme';
  beforeAll(async () => {
    for (const key of Object.keys(seen)) delete seen[key];
    engine = await startTestEngine(pipelines, { 'pipeline.orchestrator.fast-path': fastPath });
  });
  afterAll(async () => {
    await engine?.stop();
  });

  it('runs a 3-step execution to SUCCEEDED, bumping version once per committed transition', async () => {
    const started = await engine.start(tenant, { pipeline: 'three', executionId: 'three-1', input: { n: 1 } });
    expect(started).toMatchObject({ status: 'QUEUED', version: 1, dispatch: 'started' });
    const record = await engine.waitFor(tenant, 'three-1', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');
    // created (1) + QUEUED→RUNNING (1) + three step commits (3)
    expect(record.version).toBe(5);
    expect(record.segmentInput).toEqual({ n: 1, trail: ['a', 'b', 'c'] });
    expect(['a', 'b', 'c'].map((s) => keysOf(`three-1/${s}`))).toEqual([['three-1:0:1'], ['three-1:1:1'], ['three-1:2:1']]);
    const result = await engine.service.client.workflow.getHandle(record.workflowId).result();
    expect(result).toEqual({ n: 1, trail: ['a', 'b', 'c'] });
  });

  it('retries a step that fails twice with committed attempts 1, 2, 3 and waits within the backoff bounds', async () => {
    await engine.start(tenant, { pipeline: 'flaky-last', executionId: 'flaky-1', input: { failTimes: 2 } });
    const record = await engine.waitFor(tenant, 'flaky-1', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');
    expect(record.attempt).toBe(3);
    const calls = seen['flaky-1/flaky'];
    expect(calls.map((c) => c.key)).toEqual(['flaky-1:1:1', 'flaky-1:1:2', 'flaky-1:1:3']);
    // Retry intent (attempt, nextDueAt) was committed before the wait: the retry sees it stored.
    expect(calls[1]).toMatchObject({ recordAttempt: 2 });
    expect(calls[1].nextDueAt).not.toBeNull();
    // jitter off: retry 1 waits 200 ms, retry 2 min(300, 400) = 300 ms.
    expect(calls[1].at - calls[0].at).toBeGreaterThanOrEqual(200);
    expect(calls[2].at - calls[1].at).toBeGreaterThanOrEqual(300);
    expect(calls[2].at - calls[0].at).toBeLessThan(scaled(10_000));
    // created + RUNNING + step a + two retry commits + success
    expect(record.version).toBe(6);
  });

  it('exhausts retry-limit 2 in exactly 3 invocations and writes a retry_exhausted envelope', async () => {
    await engine.start(tenant, {
      pipeline: 'always-failing',
      executionId: 'exhaust-1',
      executionKey: 'order-77',
      correlationId: 'corr-9',
      resource: { type: 'order', name: 'orders-eu' },
      input: { order: 77 },
    });
    const record = await engine.waitFor(tenant, 'exhaust-1', ['FAILED', 'SUCCEEDED']);
    expect(keysOf('exhaust-1/broken')).toEqual(['exhaust-1:1:1', 'exhaust-1:1:2', 'exhaust-1:1:3']);
    expect(keysOf('exhaust-1/never')).toEqual([]);
    expect(record).toMatchObject({ status: 'FAILED', failedStepIndex: 1, terminalReason: 'retry_exhausted', lastErrorCode: 'DEPENDENCY_DOWN' });
    // The failed step's persisted segment input is step a's output.
    expect(record.segmentInput).toEqual({ order: 77, trail: ['a'] });
    const { entries } = await engine.dlq.list(tenant, { limit: 10 });
    const entry = entries.find((e) => e.envelope.executionId === 'exhaust-1');
    expect(entry?.envelope).toEqual({
      tenantId: tenant,
      executionId: 'exhaust-1',
      executionKey: 'order-77',
      transitionKey: 'exhaust-1:1:3',
      correlationId: 'corr-9',
      resourceType: 'order',
      resourceName: 'orders-eu',
      pipeline: 'always-failing',
      pipelineVersion: 1,
      transport: 'LOCAL',
      platform: expect.stringMatching(/^node-/),
      terminalStatus: 'FAILED',
      createdAtEpochMs: expect.any(Number),
      terminalReason: 'retry_exhausted',
      errorCode: 'DEPENDENCY_DOWN',
      errorMessage: 'still down',
      retryable: true,
      retriesObserved: 2,
    });
    expect(entry?.recordVersion).toBe(record.version);
  });

  it('ends retry-limit 0 in retry_exhausted after one invocation', async () => {
    await engine.start(tenant, { pipeline: 'no-retries', executionId: 'zero-1' });
    const record = await engine.waitFor(tenant, 'zero-1', ['FAILED', 'SUCCEEDED']);
    expect(keysOf('zero-1/once')).toEqual(['zero-1:0:1']);
    expect(record.terminalReason).toBe('retry_exhausted');
    const { entries } = await engine.dlq.list(tenant, { limit: 10, terminalReason: 'retry_exhausted' });
    expect(entries.find((e) => e.envelope.executionId === 'zero-1')?.envelope.retriesObserved).toBe(0);
  });

  it('fails a NonRetryableException fast with non_retryable, and Temporal shows the run failed', async () => {
    await engine.start(tenant, { pipeline: 'rejects-payload', executionId: 'nonretry-1', input: { amount: -1 } });
    const record = await engine.waitFor(tenant, 'nonretry-1', ['FAILED', 'SUCCEEDED']);
    expect(keysOf('nonretry-1/validate')).toEqual([`${tenant}/nonretry-1:0:1`]); // a FUNCTION step's invocationId is the tenant-qualified key
    expect(record).toMatchObject({ terminalReason: 'non_retryable', lastErrorCode: 'INVALID_AMOUNT' });
    const envelope = (await engine.dlq.list(tenant, { limit: 10, errorCode: 'INVALID_AMOUNT' })).entries[0]?.envelope;
    expect(envelope).toMatchObject({ transport: 'FUNCTION', terminalReason: 'non_retryable', retryable: false, retriesObserved: 0 });

    const handle = engine.service.client.workflow.getHandle(record.workflowId);
    const failure = await handle.result().catch((err) => err);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(failure.cause).toBeInstanceOf(ApplicationFailure);
    expect(failure.cause.type).toBe('PipelineExecutionFailed');
    // A regular activity's failure reaches the workflow wrapped in an ActivityFailure; a local
    // activity's (the fast path) as the step's own ApplicationFailure.
    if (fastPath) expect(failure.cause.cause).toBeInstanceOf(ApplicationFailure);
    else {
      expect(failure.cause.cause).toBeInstanceOf(ActivityFailure);
      expect(failure.cause.cause.cause).toBeInstanceOf(ApplicationFailure);
    }
    const description = await handle.describe();
    expect(description.status.name).toBe('FAILED');
    expect(description.typedSearchAttributes.get(PipelineStatus)).toBe('FAILED');
    // The same decision on both paths: the step's committed terminal outcome ends the run, no
    // abandonStep after it (on the fast path a local-activity marker, on the plain one an activity).
    const events = (await handle.fetchHistory()).events ?? [];
    const abandons = events.filter(
      (event) =>
        event.activityTaskScheduledEventAttributes?.activityType?.name === 'abandonStep' ||
        (event.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
          Buffer.from(event.markerRecordedEventAttributes.details?.data?.payloads?.[0]?.data ?? [])
            .toString('utf8')
            .includes('"activity_type":"abandonStep"')),
    );
    expect(abandons).toHaveLength(0);
    const steps = events.filter((event) =>
      fastPath ? event.markerRecordedEventAttributes?.markerName === 'core_local_activity' : event.activityTaskScheduledEventAttributes,
    );
    expect(steps).toHaveLength(1);
  });

  it('fails an operator whose output is not JSON as non_retryable, without crashing the worker', async () => {
    await engine.start(tenant, { pipeline: 'bad-output', executionId: 'bigint-1' });
    const record = await engine.waitFor(tenant, 'bigint-1', ['FAILED', 'SUCCEEDED']);
    expect(keysOf('bigint-1/bigint')).toHaveLength(1);
    expect(record).toMatchObject({ terminalReason: 'non_retryable', lastErrorCode: 'OPERATOR_OUTPUT_NOT_SERIALIZABLE' });
    // The worker is still serving: another execution succeeds after it.
    await engine.start(tenant, { pipeline: 'three', executionId: 'after-bigint' });
    expect((await engine.waitFor(tenant, 'after-bigint', ['SUCCEEDED', 'FAILED'])).status).toBe('SUCCEEDED');
  });

  it('labels the run and its activities for the Temporal UI', async () => {
    await engine.start(tenant, { pipeline: 'three', executionId: 'ui-1' });
    const record = await engine.waitFor(tenant, 'ui-1', ['SUCCEEDED']);
    const handle = engine.service.client.workflow.getHandle(record.workflowId);
    // The record commits with the last step; the run closes one workflow task later.
    await handle.result();
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    // PipelineStatus is set only where it says more than ExecutionStatus: FAILED, REMOTE_OUTCOME_UNKNOWN.
    expect(description.typedSearchAttributes.get(PipelineStatus)).toBeUndefined();
    expect(description.typedSearchAttributes.get(PipelineTenant)).toBe(tenant);
    expect(description.typedSearchAttributes.get(PipelineName)).toBe('three');
    expect(description.typedSearchAttributes.get(PipelineExecutionId)).toBe('ui-1');
    expect(await description.staticSummary()).toBe(`three v1 · tenant ${tenant} · execution ui-1`);
    expect(await description.staticDetails()).toContain('**Pipeline** three version 1, 3 steps');
    expect(await description.staticDetails()).toContain('**Resumes** at step 0, attempt 1');
    const history = await handle.fetchHistory();
    // Each step's activity, or on the fast path its local-activity marker, says which step it is.
    const summaries = (history.events ?? [])
      .filter((event) => (fastPath ? event.markerRecordedEventAttributes?.markerName === 'core_local_activity' : event.activityTaskScheduledEventAttributes))
      .map((event) => JSON.parse(Buffer.from(event.userMetadata?.summary?.data ?? []).toString('utf8')));
    // The default retry-limit (5): each activity may run its step's attempts 1 to 6.
    expect(summaries).toEqual(
      [0, 1, 2].map((i) => `step ${i} ${'abc'[i]} · LOCAL${fastPath ? ' · fast path' : ''} · transition ui-1:${i}:1, retries up to ui-1:${i}:6`),
    );
    expect((history.events ?? []).filter((event) => event.activityTaskScheduledEventAttributes)).toHaveLength(fastPath ? 0 : 3);
  });

  it('returns the existing execution for a repeated executionKey', async () => {
    const first = await engine.request('POST', `/api/tenants/${tenant}/executions`, { body: { pipeline: 'three', executionKey: 'invoice-5' } });
    expect(first.status).toBe(202);
    const second = await engine.request('POST', `/api/tenants/${tenant}/executions`, { body: { pipeline: 'three', executionKey: 'invoice-5' } });
    expect(second.status).toBe(200);
    const [a, b] = [await first.json(), await second.json()];
    expect(b.executionId).toBe(a.executionId);
    const count = await engine.service.db.query<{ n: number }>("SELECT count(*)::int AS n FROM execution_record WHERE execution_key = 'invoice-5'");
    expect(count.rows[0].n).toBe(1);
  });
});
