/**
 * The fallback when Temporal gives up on a step without the activity committing an
 * outcome (the worker kept dying past the redelivery allowance): abandonStep commits
 * FAILED with a retry_exhausted envelope, once, whatever number of times it is called.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, createRunEnder } from '../../src/activities/engine-activities';
import { loadConfig } from '../../src/config/config';
import { createLog } from '../../src/log';
import { Metrics } from '../../src/metrics';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { PipelineRegistry } from '../../src/pipeline/registry';
import { DlqStore } from '../../src/store/dlq-store';
import { DefinitionStore } from '../../src/store/definition-store';
import { EffectStore } from '../../src/store/effect-store';
import { ExecutionStore } from '../../src/store/execution-store';
import { SignalsStore } from '../../src/store/signals-store';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

describe('abandonStep', () => {
  it('commits FAILED with a STEP_ABANDONED envelope exactly once', async () => {
    const store = new ExecutionStore(database.db);
    const registry = new PipelineRegistry(loadConfig({}, { 'pipeline.auth.tokens': [] }), [
      definePipeline({ name: 'p', steps: [localStep('a', () => null), localStep('b', () => null)] }),
    ]);
    const metrics = new Metrics(new SignalsStore(database.db), 5);
    const activities = createActivities({ store, effects: new EffectStore(database.db), registry, log: createLog({ level: 'silent' }), metrics });
    await store.create(
      {
        tenantId: 't',
        executionId: 'ab-1',
        executionKey: null,
        pipeline: 'p',
        workflowId: 'w',
        stepCount: 2,
        input: { x: 1 },
        correlationId: 'c-1',
        resourceType: null,
        resourceName: null,
      },
      {},
      { owner: 'test', ms: 1000 },
    );
    await store.begin({ tenantId: 't', executionId: 'ab-1', runId: 'run-1', dispatchId: 'start' });

    // As the workflow of run-1 calls it: an activity of that run.
    const abandon = () =>
      new MockActivityEnvironment({ workflowExecution: { workflowId: 'w', runId: 'run-1' } }).run(activities.abandonStep, {
        tenantId: 't',
        executionId: 'ab-1',
        stepIndex: 0,
        reason: 'worker lost 11 times',
      });
    const first = await abandon();
    const second = await abandon();
    expect(first).toEqual({ status: 'FAILED', terminalReason: 'retry_exhausted', errorCode: 'STEP_ABANDONED', stepIndex: 0, transitionKey: 'ab-1:0:1' });
    expect(second).toEqual(first);
    const record = await store.get('t', 'ab-1');
    expect(record).toMatchObject({ status: 'FAILED', failedStepIndex: 0, terminalReason: 'retry_exhausted', version: 3, segmentInput: { x: 1 } });
    const { entries } = await new DlqStore(database.db).list('t', { limit: 10 });
    expect(entries).toHaveLength(1);
    expect(await metrics.registry.getSingleMetricAsString('pipeline_executions_failed_total')).toContain(
      'pipeline_executions_failed_total{terminal_reason="retry_exhausted",error_code="STEP_ABANDONED"} 1',
    );
    expect(entries[0].envelope).toMatchObject({
      executionId: 'ab-1',
      correlationId: 'c-1',
      errorCode: 'STEP_ABANDONED',
      terminalReason: 'retry_exhausted',
      transitionKey: 'ab-1:0:1',
    });
  });

  it("names the step from the stored shape when this worker does not have the record's pinned version (not `#k`)", async () => {
    const store = new ExecutionStore(database.db);
    const definitions = new DefinitionStore(database.db);
    // This worker has only version 2; the record was admitted under version 1, whose shape is stored.
    const registry = new PipelineRegistry(loadConfig({}, { 'pipeline.auth.tokens': [] }), [
      definePipeline({ name: 'q', version: 2, steps: [localStep('fetch', () => null), localStep('store', () => null)] }),
    ]);
    await definitions.remember({ pipeline: 'q', version: 1, fingerprint: 'fp-v1', steps: ['validate', 'charge', 'ship'] });
    const log = createLog({ level: 'silent' });
    const metrics = new Metrics(new SignalsStore(database.db), 5);
    const admit = async (executionId: string) => {
      await store.create(
        {
          tenantId: 't',
          executionId,
          executionKey: null,
          pipeline: 'q',
          pipelineVersion: 1,
          definitionFingerprint: 'fp-v1',
          workflowId: `w-${executionId}`,
          stepCount: 3,
          input: { x: 1 },
          correlationId: null,
          resourceType: null,
          resourceName: null,
        },
        {},
        { owner: 'test', ms: 1000 },
      );
      await store.begin({ tenantId: 't', executionId, runId: `run-${executionId}`, dispatchId: 'start' });
    };
    await admit('named-1');
    await admit('unnamed-1');
    const withShapes = createRunEnder({ store, effects: new EffectStore(database.db), registry, log, metrics, definitions });
    const withoutShapes = createRunEnder({ store, effects: new EffectStore(database.db), registry, log, metrics });
    // Version 1's first step ("validate") was in flight when its run was terminated.
    expect(await withShapes({ tenantId: 't', executionId: 'named-1', runId: 'run-named-1', ending: 'TERMINATED', stepIndex: 0 })).toBe('ended');
    expect(await withoutShapes({ tenantId: 't', executionId: 'unnamed-1', runId: 'run-unnamed-1', ending: 'TERMINATED', stepIndex: 0 })).toBe('ended');
    const named = await store.get('t', 'named-1');
    const unnamed = await store.get('t', 'unnamed-1');
    expect(named).toMatchObject({ status: 'FAILED', failedStepIndex: 0, lastErrorCode: 'RUN_TERMINATED' });
    expect(named!.lastErrorMessage).toContain('at step 0 (validate)');
    // The control: without the stored shapes this worker cannot name the step, which is what the lookup fixes.
    expect(unnamed!.lastErrorMessage).toContain('at step 0 (#0)');
    const { entries } = await new DlqStore(database.db).list('t', { errorCode: 'RUN_TERMINATED', limit: 10 });
    expect(entries.map((entry) => entry.envelope.errorMessage).sort()).toEqual([unnamed!.lastErrorMessage, named!.lastErrorMessage].sort());
  });
});
