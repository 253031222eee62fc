import { describe, expect, it } from 'vitest';
import { nominalDelayMs, retryDelayMs, type RetryPolicy } from './retry';

const policy: RetryPolicy = { limit: 5, waitMs: 1000, maxBackoffMs: 30_000, jitter: true };

describe('retry backoff', () => {
  it('doubles from retry-wait-ms and caps at max-backoff', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => nominalDelayMs(policy, n))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });

  it('keeps jittered delays within [delay/2, delay]', () => {
    for (const r of [0, 0.25, 0.999]) {
      const delay = retryDelayMs(policy, 3, () => r);
      expect(delay).toBeGreaterThanOrEqual(2000);
      expect(delay).toBeLessThanOrEqual(4000);
    }
  });

  it('uses the nominal delay when jitter is off', () => {
    expect(retryDelayMs({ ...policy, jitter: false }, 2, () => 0)).toBe(2000);
  });

  it('stays at the cap for a retry number far past it (the checkpoint publisher counts attempts without bound)', () => {
    expect(nominalDelayMs(policy, 5000)).toBe(30000);
  });
});
