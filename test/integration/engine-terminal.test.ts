/**
 * The engine's terminal failures against the real dev server and Postgres: every path
 * that ends a run does so with one non-retryable failure carrying TerminalDetails, so
 * Temporal never retries it and the workflow never mistakes it for an abandoned step.
 * Counted through the run's history (activities scheduled, attempts started) and the
 * operator's invocations.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/engine-activities';
import { workflowIdFor } from '../../src/ids';
import { createLog } from '../../src/log';
import { definePipeline, localStep, NonRetryableException } from '../../src/pipeline/define';
import { EffectStore } from '../../src/store/effect-store';
import { FailureTypes, type TerminalDetails } from '../../src/workflows/types';
import { startTestEngine, type TestEngine } from '../helpers/engine';
import { deleteRecordBehindTheEngine } from '../helpers/unreachable-states';
import { scaled } from '../helpers/time-scale';

let engine: TestEngine;
const invocations: Record<string, number> = {};
const deleteRecord = (executionId: string) => deleteRecordBehindTheEngine(engine.service.db, 'acme', executionId);

const pipelines = [
  definePipeline({
    name: 'vanishing',
    steps: [
      localStep('erase', async (_input: unknown, ctx) => {
        invocations[ctx.executionId] = (invocations[ctx.executionId] ?? 0) + 1;
        // Someone deletes the record while the step runs: its commit finds no row.
        await deleteRecord(ctx.executionId);
        return {};
      }),
      localStep('never', () => ({})),
    ],
  }),
  definePipeline({
    name: 'raced',
    steps: [
      localStep('first', async (_input: unknown, ctx) => {
        invocations[ctx.executionId] = (invocations[ctx.executionId] ?? 0) + 1;
        // Another delivery of this very attempt committed its success first; this one then fails.
        await engine.service.store.commitSucceeded({
          tenantId: ctx.tenantId,
          executionId: ctx.executionId,
          stepIndex: ctx.stepIndex,
          attempt: ctx.attempt,
          output: { by: 'other' },
        });
        throw new NonRetryableException('too late', 'LATE_FAILURE');
      }),
      localStep('second', (input: unknown) => input),
    ],
  }),
  definePipeline({
    name: 'plain',
    steps: [
      localStep('one', (_input: unknown, ctx) => {
        invocations[ctx.executionId] = (invocations[ctx.executionId] ?? 0) + 1;
        return {};
      }),
    ],
  }),
];

/** The run's failure, and what its history says about its activities. */
async function closedRun(executionId: string) {
  const handle = engine.service.client.workflow.getHandle(workflowIdFor('acme', executionId));
  const failure = await handle.result().then(
    () => undefined,
    (err: unknown) => err,
  );
  const history = await handle.fetchHistory();
  const scheduled = (history.events ?? [])
    .filter((e) => e.activityTaskScheduledEventAttributes)
    .map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name);
  const attempts = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes).map((e) => e.activityTaskStartedEventAttributes!.attempt);
  return { failure, scheduled, attempts };
}

function expectTerminal(failure: unknown, errorCode: string): TerminalDetails {
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  const outer = (failure as WorkflowFailedError).cause;
  expect(outer).toBeInstanceOf(ApplicationFailure);
  expect((outer as ApplicationFailure).type).toBe(FailureTypes.terminal);
  const details = (outer as ApplicationFailure).details?.[0] as TerminalDetails;
  expect(details).toMatchObject({ status: 'FAILED', terminalReason: 'non_retryable', errorCode });
  return details;
}

beforeAll(async () => {
  engine = await startTestEngine(pipelines);
}, scaled(120_000));
afterAll(async () => {
  await engine?.stop();
});

describe('terminal failures', () => {
  it('ends a run whose record is gone at its first step once, without a Temporal retry or an abandonStep', async () => {
    engine.service.dispatcher.beforeStart = async (_tenant, executionId) => {
      if (executionId === 'gone-1') await deleteRecord(executionId);
    };
    try {
      const res = await engine.request('POST', '/api/tenants/acme/executions', { body: { pipeline: 'plain', executionId: 'gone-1' } });
      expect(res.status).toBe(202);
    } finally {
      engine.service.dispatcher.beforeStart = undefined;
    }
    const run = await closedRun('gone-1');
    expectTerminal(run.failure, 'EXECUTION_RECORD_MISSING');
    expect(run.scheduled).toEqual(['plain:one']);
    expect(run.attempts).toEqual([1]);
    expect(invocations['gone-1']).toBeUndefined();
  });

  it('ends a run whose record vanished during a step once: the commit that finds no row is terminal, not retried', async () => {
    await engine.start('acme', { pipeline: 'vanishing', executionId: 'gone-2' });
    const run = await closedRun('gone-2');
    expectTerminal(run.failure, 'EXECUTION_RECORD_MISSING');
    expect(run.scheduled).toEqual(['vanishing:erase']);
    expect(run.attempts).toEqual([1]);
    expect(invocations['gone-2']).toBe(1);
  });

  it('abandonStep answers TerminalDetails for a missing record instead of throwing a retryable error', async () => {
    const activities = createActivities({
      store: engine.service.store,
      effects: new EffectStore(engine.service.db),
      registry: engine.service.registry,
      log: createLog({ level: 'silent' }),
    });
    const details = await activities.abandonStep({ tenantId: 'acme', executionId: 'nowhere', stepIndex: 0, reason: 'worker kept dying' });
    expect(details).toMatchObject({ status: 'FAILED', errorCode: 'EXECUTION_RECORD_MISSING', stepIndex: 0, transitionKey: 'nowhere:0:1' });
  });

  it("answers the settled success when a failure commit lost its race to the same attempt's success, instead of ending the run FAILED", async () => {
    await engine.start('acme', { pipeline: 'raced', executionId: 'raced-1' });
    const handle = engine.service.client.workflow.getHandle(workflowIdFor('acme', 'raced-1'));
    expect(await handle.result()).toEqual({ by: 'other' });
    const record = await engine.waitFor('acme', 'raced-1', ['SUCCEEDED', 'FAILED']);
    expect(record.status).toBe('SUCCEEDED');
    expect(invocations['raced-1']).toBe(1);
    const dlq = await engine.service.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM execution_dlq WHERE execution_id = 'raced-1'`);
    expect(dlq.rows[0].n).toBe(0);
    expect(engine.logs.filter((l) => l.event === 'execution_failed' && l.executionId === 'raced-1')).toEqual([]);
  });
});
