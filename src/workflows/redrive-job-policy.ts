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

/**
 * A job that yields to live traffic (`pipeline.redrive-job.yield-to-live`): the rate it allows
 * itself, steered by how long its own admissions take. An admission is the same Postgres
 * statement and Temporal start as a live submission, so when the job's admissions slow down,
 * live submissions have slowed down too. The job backs off while its admissions take more than
 * `YIELD.slowerThan` × the quietest it has seen, and speeds up again (never past the asked
 * rate) while they take at most `YIELD.fasterThan` × it. The asked rate stays the ceiling.
 */
export interface Yield {
  /** the rate the job allows itself now, per second (≤ the asked rate) */
  rate: number;
  /** the quietest tick's median admission so far, ms: the job's idea of an unloaded machine */
  quietestMs: number | null;
  /** the latest tick's median admission, ms */
  latestMs: number | null;
  /** when the rate was last steered (workflow time, ms since the epoch) */
  steeredAtMs: number;
}

export const YIELD = {
  /** back off while the median admission takes more than this many times the quietest */
  slowerThan: 2,
  /** speed up while it takes at most this many times the quietest */
  fasterThan: 1.5,
  /** backing off multiplies the rate by this */
  down: 0.7,
  /** speeding up multiplies it by this */
  up: 1.25,
  /** the rate is steered at most once per this many ms (an admission's effect on the machine shows within about a second) */
  everyMs: 1000,
  /** a job starts at this share of its asked rate and speeds up from there */
  startShare: 0.2,
  /** it never goes below this rate (per second), nor below its asked rate when that is lower */
  floor: 1,
} as const;

const floorOf = (asked: number) => Math.min(asked, YIELD.floor);

/** Where a yielding job starts: a fifth of its asked rate, at least the floor. */
export function startYield(asked: number, nowMs: number): Yield {
  return { rate: Math.max(floorOf(asked), round2(asked * YIELD.startShare)), quietestMs: null, latestMs: null, steeredAtMs: nowMs };
}

/**
 * The next state after a tick whose admissions took `medianMs` at the median (null: it admitted
 * nothing, so there is nothing to steer by). Steers at most once per `YIELD.everyMs`.
 */
export function steerYield(current: Yield, asked: number, medianMs: number | null, nowMs: number): Yield {
  const capped = Math.min(current.rate, asked);
  if (medianMs === null) return capped === current.rate ? current : { ...current, rate: capped };
  const quietestMs = current.quietestMs === null ? medianMs : Math.min(current.quietestMs, medianMs);
  const next = { ...current, rate: capped, quietestMs, latestMs: medianMs };
  if (nowMs - current.steeredAtMs < YIELD.everyMs) return next;
  let rate = capped;
  if (medianMs > YIELD.slowerThan * quietestMs) rate = Math.max(floorOf(asked), round2(capped * YIELD.down));
  else if (medianMs <= YIELD.fasterThan * quietestMs) rate = Math.min(asked, round2(capped * YIELD.up));
  return { ...next, rate, steeredAtMs: nowMs };
}

/** Whether the job's latest admissions are slower than it tolerates (it is backing off, not ramping up). */
export function yieldSlowed(state: Pick<Yield, 'quietestMs' | 'latestMs'>): boolean {
  return state.quietestMs !== null && state.latestMs !== null && state.latestMs > YIELD.slowerThan * state.quietestMs;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}
