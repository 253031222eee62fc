/**
 * Retry policy: the spec's defaults, a step's override, and the backoff formula. The one
 * formula serves every backoff in the service: step retries, the store's transient-error
 * retries and the checkpoint publisher's redelivery.
 *
 * `limit` counts retries after the first attempt (limit 5 = up to 6 attempts).
 * The delay before retry n (n ≥ 1) is min(maxBackoffMs, waitMs · 2^(n-1)); with jitter
 * it is drawn uniformly from [delay/2, delay] ("equal jitter"), so a retry never comes
 * sooner than half the nominal delay.
 */
export interface RetryPolicy {
  /** retries after the first attempt; default 5 */
  limit: number;
  /** base delay, ms; default 1000 */
  waitMs: number;
  /** cap of the exponential delay, ms; default 30000 */
  maxBackoffMs: number;
  /** equal jitter; default true */
  jitter: boolean;
}

export type RetryOverride = Partial<RetryPolicy>;

/** The part of a policy the backoff formula reads. */
export type Backoff = Pick<RetryPolicy, 'waitMs' | 'maxBackoffMs' | 'jitter'>;

/** The delay before retry `retryNumber` (from 1) without jitter. */
export function nominalDelayMs(policy: Backoff, retryNumber: number): number {
  const exponential = policy.waitMs * 2 ** Math.max(0, retryNumber - 1);
  return Math.min(policy.maxBackoffMs, exponential);
}

/** The delay before retry `retryNumber` (from 1): nominal, or drawn from [nominal/2, nominal] with jitter. */
export function retryDelayMs(policy: Backoff, retryNumber: number, random: () => number = Math.random): number {
  const nominal = nominalDelayMs(policy, retryNumber);
  if (!policy.jitter) return nominal;
  return Math.round(nominal / 2 + random() * (nominal / 2));
}
