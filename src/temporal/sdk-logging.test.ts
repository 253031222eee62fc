/**
 * Which Temporal SDK lines are kept at warn: only those the service does not already say in
 * its own words (the rest go to debug, so `npm start`'s terminal is not flooded).
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { FailureTypes } from '../workflows/types';
import { isRepeatedBySdk } from './sdk-logging';

const failure = (type: string) => ApplicationFailure.create({ type, message: 'm' });

describe('isRepeatedBySdk', () => {
  it("demotes a step's deliberate failures and a pipeline run's failure, which the engine logs itself", () => {
    for (const type of [FailureTypes.retryable, FailureTypes.terminal, FailureTypes.duplicateRun])
      expect(isRepeatedBySdk('Activity failed', { error: failure(type), activityType: 'demo:charge' })).toBe(true);
    expect(isRepeatedBySdk('Workflow failed', { workflowType: 'pipelineWorkflow', error: new Error('x') })).toBe(true);
    expect(
      isRepeatedBySdk('shutdown_worker rpc errored during worker shutdown: Status { code: Cancelled, message: "operation was canceled" }', {
        sdkComponent: 'core',
      }),
    ).toBe(true);
  });

  it('keeps at warn what the engine does not say: other failures, other workflows, anything else', () => {
    expect(isRepeatedBySdk('Activity failed', { error: failure('SomethingElse') })).toBe(false);
    expect(isRepeatedBySdk('Activity failed', { error: new Error('boom') })).toBe(false);
    expect(isRepeatedBySdk('Activity failed', undefined)).toBe(false);
    expect(isRepeatedBySdk('Workflow failed', { workflowType: 'redriveJobWorkflow' })).toBe(false);
    expect(isRepeatedBySdk('Failed to poll for task', { workflowType: 'pipelineWorkflow' })).toBe(false);
  });
});
