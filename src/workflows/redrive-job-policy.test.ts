import { describe, expect, it } from 'vitest';
import { DEFAULT_HALT_ON } from '../contract/requests';
import { dueItems, haltVerdict, msUntilNextDue } from './redrive-job-policy';

const zero = { succeeded: 0, failedAgain: 0, remoteOutcomeUnknown: 0 };

describe('haltVerdict', () => {
  it('waits for minFinished, then halts when the failed-again share reaches the threshold', () => {
    expect(haltVerdict({ succeeded: 0, failedAgain: 4, remoteOutcomeUnknown: 0 }, zero, DEFAULT_HALT_ON)).toBeNull();
    expect(haltVerdict({ succeeded: 3, failedAgain: 2, remoteOutcomeUnknown: 0 }, zero, DEFAULT_HALT_ON)).toBeNull();
    expect(haltVerdict({ succeeded: 2, failedAgain: 3, remoteOutcomeUnknown: 0 }, zero, DEFAULT_HALT_ON)).toBe(
      '3 of 5 re-driven items failed again (60%, haltOn.failedAgainShare 50%)',
    );
  });

  it('counts only what finished since the baseline, so a resumed job is not halted by the old failures', () => {
    const baseline = { succeeded: 0, failedAgain: 5, remoteOutcomeUnknown: 0 };
    expect(haltVerdict({ succeeded: 10, failedAgain: 5, remoteOutcomeUnknown: 0 }, baseline, DEFAULT_HALT_ON)).toBeNull();
    expect(haltVerdict({ succeeded: 2, failedAgain: 8, remoteOutcomeUnknown: 0 }, baseline, DEFAULT_HALT_ON)).toMatch(/^3 of 5/);
  });

  it('halts on one REMOTE_OUTCOME_UNKNOWN unless told not to', () => {
    const now = { succeeded: 9, failedAgain: 0, remoteOutcomeUnknown: 1 };
    expect(haltVerdict(now, zero, DEFAULT_HALT_ON)).toMatch(/REMOTE_OUTCOME_UNKNOWN/);
    expect(haltVerdict(now, zero, { ...DEFAULT_HALT_ON, remoteOutcomeUnknown: false })).toBeNull();
  });

  it('lets a canary judge on its own size', () => {
    expect(haltVerdict({ succeeded: 0, failedAgain: 2, remoteOutcomeUnknown: 0 }, zero, DEFAULT_HALT_ON, 2)).toMatch(/^2 of 2/);
  });
});

describe('pacing', () => {
  const pace = { originMs: 1_000_000, processedAtOrigin: 10 };
  it('makes the first item due at once and one more every 1/rate seconds', () => {
    expect(dueItems(pace, 50, 10, 1_000_000)).toBe(1);
    expect(dueItems(pace, 50, 11, 1_000_000)).toBe(0);
    expect(dueItems(pace, 50, 11, 1_001_000)).toBe(50);
    expect(dueItems(pace, 0.5, 11, 1_001_999)).toBe(0);
    expect(dueItems(pace, 0.5, 11, 1_002_000)).toBe(1);
  });
  it('never answers a negative count, and says when the next item is due', () => {
    expect(dueItems(pace, 10, 100, 1_000_000)).toBe(0);
    expect(msUntilNextDue(pace, 20, 12, 1_000_000)).toBe(100);
    expect(msUntilNextDue(pace, 20, 12, 1_000_500)).toBe(0);
  });
});
