import { describe, expect, it } from 'vitest';
import { DEFAULT_HALT_ON } from '../contract/requests';
import type { JobTickState } from '../service/redrive-job-ticks';
import { jobCurrentDetails, jobSearchStatus } from './redrive-job-details';

const state = (over: Partial<JobTickState>): JobTickState => ({
  status: 'RUNNING',
  batchSize: 50,
  ratePerSecond: 10,
  canary: null,
  haltOn: DEFAULT_HALT_ON,
  processed: 35,
  remaining: 0,
  admitted: 35,
  running: 1,
  succeeded: 34,
  failedAgain: 0,
  remoteOutcomeUnknown: 0,
  unavailable: false,
  ...over,
});

describe('a job in the Temporal UI', () => {
  it("a COMPLETED job's details say its counts are as of its end, and where its runs' outcomes since are", () => {
    const details = jobCurrentDetails('acme', 'j1', state({ status: 'COMPLETED' }));
    expect(details).toContain('**When it ended** 1 re-driven run(s) were still running; their outcomes since: `npx pipeline-admin jobs show j1 --tenant acme`');
    expect(details).toContain('**Progress** at its end 35 of 35 items processed');
    expect(jobCurrentDetails('acme', 'j1', state({})).includes('When it ended')).toBe(false);
  });

  it('PipelineJobStatus tells a halted job from a paused one', () => {
    expect(jobSearchStatus(state({ status: 'PAUSED', haltReason: 'canary of 2: …' }))).toBe('HALTED');
    expect(jobSearchStatus(state({ status: 'PAUSED', haltReason: null }))).toBe('PAUSED');
    expect(jobSearchStatus(state({ status: 'GONE' }))).toBeUndefined();
  });
});
