/**
 * The fallback when Temporal gives up on a step without the activity committing an
 * outcome (the worker kept dying past the redelivery allowance): abandonStep commits
 * FAILED with a retry_exhausted envelope, once, whatever number of times it is called.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../src/activities/engine-activities';
import { loadConfig } from '../../src/config/config';
import { createLog } from '../../src/log';
import { Metrics } from '../../src/metrics';
import { definePipeline, localStep } from '../../src/pipeline/define';
import { PipelineRegistry } from '../../src/pipeline/registry';
import { DlqStore } from '../../src/store/dlq-store';
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
});
