import { describe, expect, it } from 'vitest';
import { DEFAULT_HALT_ON } from '../contract/requests';
import type { JobCounts, RedriveJob } from '../store/redrive-job-store';
import { achievedRate, activeSeconds, pausedIntervals } from './job-rate';
import { jobView } from './redrive-jobs';

const at = (seconds: number) => new Date(Date.UTC(2026, 11, 2, 12, 0, 0) + seconds * 1000).toISOString();
const entry = (action: 'pause' | 'resume' | 'halt' | 'abort', seconds: number) => ({ action, principal: 'ops', at: at(seconds) });

describe("a bulk job's rate counts the time it ran, not the time it was paused", () => {
  it('finds the paused intervals: pause or halt to the next resume, abort or fail; one still open runs to now', () => {
    expect(pausedIntervals([entry('pause', 10), entry('resume', 180), entry('halt', 200), entry('abort', 260)], Date.parse(at(300)))).toEqual([
      [Date.parse(at(10)), Date.parse(at(180))],
      [Date.parse(at(200)), Date.parse(at(260))],
    ]);
    expect(pausedIntervals([entry('pause', 10), entry('pause', 20)], Date.parse(at(50)))).toEqual([[Date.parse(at(10)), Date.parse(at(50))]]);
    expect(pausedIntervals([entry('resume', 10)], Date.parse(at(50)))).toEqual([]);
  });

  it('leaves out only the paused time inside the span (a pause before the first item is not in it)', () => {
    const log = [entry('pause', -30), entry('resume', -20), entry('pause', 10), entry('resume', 180)];
    expect(activeSeconds(log, at(0), at(181))).toBe(11);
    expect(activeSeconds([], at(0), at(181))).toBe(181);
    expect(activeSeconds(log, at(5), at(5))).toBe(0);
  });

  it('11 items, 10 in the first 10 s, a 170 s pause, one more after the resume: 1/s, not 0.06/s', () => {
    const log = [entry('pause', 10), entry('resume', 180)];
    expect(achievedRate(11, at(0), at(181), log)).toBe(10 / 11);
    expect(achievedRate(11, at(0), at(181), [])).toBeCloseTo(10 / 181);
    expect(achievedRate(1, at(0), at(0), log)).toBeNull();
  });

  it("the job's view: the achieved rate and the ETA after a resume come from the running time", () => {
    const stored: RedriveJob = {
      tenantId: 'acme',
      jobId: 'j-1',
      status: 'RUNNING',
      principal: 'ops',
      reason: 'ledger back',
      request: { selection: { executionIds: ['e-1'] }, reason: 'ledger back', allowFailed: true, batchSize: 50, ratePerSecond: 2, haltOn: DEFAULT_HALT_ON },
      batchSize: 50,
      ratePerSecond: 2,
      canary: null,
      haltOn: DEFAULT_HALT_ON,
      haltReason: null,
      failureReason: null,
      controlLog: [entry('pause', 10), entry('resume', 180)],
      started: true,
      excluded: {},
      selected: 29,
      yielding: null,
      createdAt: at(-1),
      updatedAt: at(180),
      finishedAt: null,
    };
    const counts: JobCounts = {
      selected: 29,
      remaining: 18,
      admitted: 11,
      skipped: 0,
      skippedByCode: {},
      succeeded: 11,
      failedAgain: 0,
      remoteOutcomeUnknown: 0,
      running: 0,
      firstProcessedAt: at(0),
      lastProcessedAt: at(181),
      lastAdmittedAt: at(181),
    };
    const view = jobView(stored, counts);
    // Before: 10 / 181 s = 0.1/s and an ETA of 18 / 0.1 = 180 s (the "0.1/s | ETA 180s").
    expect(view.rate).toMatchObject({ asked: 2, achieved: 0.9 });
    expect(view.etaSeconds).toBe(20);
  });
});
