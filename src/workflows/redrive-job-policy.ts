/**
 * The arithmetic of a bulk re-drive job, shared by its workflow (which must stay
 * deterministic, so nothing here reads a clock or does I/O) and its unit tests: how many
 * items are due at a time under the asked rate, and whether the items re-driven since the
 * last (re)start say the job must halt.
 */

/** When a job pauses itself. Defaults are filled in at creation, so a job's rules never change under it. */
export interface HaltOn {
  /** halt when failed-again items reach this share of finished ones (0 < x ≤ 1) */
  failedAgainShare: number;
  /** …once at least this many re-driven items have finished since the job (re)started */
  minFinished: number;
  /** halt as soon as one re-driven item parks as REMOTE_OUTCOME_UNKNOWN */
  remoteOutcomeUnknown: boolean;
}

/** Where the job's admitted items stand: what the halt rule reads. */
export interface OutcomeCounts {
  succeeded: number;
  failedAgain: number;
  remoteOutcomeUnknown: number;
}

/**
 * Why the job must halt, or null. Counts only items that finished since `baseline` (the
 * counts when the job started or was last resumed), so a resumed job is not halted again
 * by the failures it was halted for. `minFinished` overrides the rule's own (a canary
 * judges on its own size).
 */
export function haltVerdict(now: OutcomeCounts, baseline: OutcomeCounts, rule: HaltOn, minFinished = rule.minFinished): string | null {
  const unknown = now.remoteOutcomeUnknown - baseline.remoteOutcomeUnknown;
  if (rule.remoteOutcomeUnknown && unknown > 0) return `${unknown} re-driven item(s) parked as REMOTE_OUTCOME_UNKNOWN (haltOn.remoteOutcomeUnknown)`;
  const failed = now.failedAgain - baseline.failedAgain;
  const finished = failed + unknown + (now.succeeded - baseline.succeeded);
  if (finished < Math.max(1, minFinished) || failed === 0) return null;
  const share = failed / finished;
  if (share < rule.failedAgainShare) return null;
  return `${failed} of ${finished} re-driven items failed again (${Math.round(share * 100)}%, haltOn.failedAgainShare ${Math.round(rule.failedAgainShare * 100)}%)`;
}

/** Pacing from an origin: item n (0-based since the origin) is due at origin + n / rate seconds. */
export interface Pace {
  originMs: number;
  /** items processed (admitted or skipped) before the origin */
  processedAtOrigin: number;
}

/** How many items are due at `nowMs` beyond the `processed` so far (never negative). */
export function dueItems(pace: Pace, ratePerSecond: number, processed: number, nowMs: number): number {
  const dueSinceOrigin = Math.floor(((nowMs - pace.originMs) / 1000) * ratePerSecond + 1e-9) + 1;
  return Math.max(0, dueSinceOrigin - (processed - pace.processedAtOrigin));
}

/** Milliseconds until the next item is due (0 when one is due now). */
export function msUntilNextDue(pace: Pace, ratePerSecond: number, processed: number, nowMs: number): number {
  const next = pace.originMs + ((processed - pace.processedAtOrigin) / ratePerSecond) * 1000;
  return Math.max(0, Math.ceil(next - nowMs));
}
