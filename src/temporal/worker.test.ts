import { describe, expect, it } from 'vitest';
import { workflowCacheOptions } from './worker';

describe('workflowCacheOptions (pipeline.orchestrator.worker.max-cached-workflows)', () => {
  it("leaves the SDK's defaults when unset", () => {
    expect(workflowCacheOptions(undefined)).toEqual({});
  });

  it('sets the cache, and lowers the workflow task slots only for a cache smaller than them', () => {
    expect(workflowCacheOptions(0)).toEqual({ maxCachedWorkflows: 0 });
    expect(workflowCacheOptions(250)).toEqual({ maxCachedWorkflows: 250 });
    expect(workflowCacheOptions(40)).toEqual({ maxCachedWorkflows: 40 });
    expect(workflowCacheOptions(8)).toEqual({ maxCachedWorkflows: 8, maxConcurrentWorkflowTaskExecutions: 8 });
  });
});
