import { describe, expect, it } from 'vitest';
import { DEFAULT_HALT_ON } from '../contract/requests';
import { dueItems, haltVerdict, msUntilNextDue, startYield, steerYield, yieldSlowed, type Yield } from './redrive-job-policy';

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

describe('steerYield (a job yielding to live traffic)', () => {
  const t0 = 1_000_000;
  it('starts at a fifth of the asked rate, never below 1/s nor above the asked rate', () => {
    expect(startYield(50, t0).rate).toBe(10);
    expect(startYield(3, t0).rate).toBe(1);
    expect(startYield(0.5, t0).rate).toBe(0.5);
  });

  it('speeds up while admissions stay near the quietest, up to the asked rate and no further', () => {
    let y = startYield(50, t0);
    y = steerYield(y, 50, 20, t0 + 1000);
    expect(y).toMatchObject({ rate: 12.5, quietestMs: 20, latestMs: 20 });
    for (let s = 2; s < 20; s++) y = steerYield(y, 50, 25, t0 + s * 1000);
    expect(y.rate).toBe(50);
  });

  it('backs off while the median admission takes more than twice the quietest, down to the floor', () => {
    let y: Yield = { rate: 50, quietestMs: 20, latestMs: 20, steeredAtMs: t0 };
    y = steerYield(y, 50, 41, t0 + 1000);
    expect(y.rate).toBe(35);
    expect(yieldSlowed(y)).toBe(true);
    for (let s = 2; s < 30; s++) y = steerYield(y, 50, 200, t0 + s * 1000);
    expect(y.rate).toBe(1);
  });

  it('holds between 1.5× and 2× the quietest', () => {
    const y: Yield = { rate: 20, quietestMs: 20, latestMs: 20, steeredAtMs: t0 };
    expect(steerYield(y, 50, 35, t0 + 1000).rate).toBe(20);
  });

  it('steers at most once a second, and not at all on a tick that admitted nothing', () => {
    const y: Yield = { rate: 20, quietestMs: 20, latestMs: 20, steeredAtMs: t0 };
    expect(steerYield(y, 50, 100, t0 + 999)).toMatchObject({ rate: 20, latestMs: 100 });
    expect(steerYield(y, 50, null, t0 + 5000)).toBe(y);
  });

  it('learns a quieter baseline, and never allows more than the asked rate', () => {
    const y: Yield = { rate: 60, quietestMs: 40, latestMs: 40, steeredAtMs: t0 };
    const next = steerYield(y, 50, 10, t0 + 1000);
    expect(next).toMatchObject({ quietestMs: 10, rate: 50 });
  });
});
