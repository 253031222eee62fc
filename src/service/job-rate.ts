/**
 * A bulk job's achieved rate: items processed per second of the time it was running. The time
 * it spent paused (by an operator, or halted by its canary or haltOn) between its first and its
 * latest processed item is left out, so a resumed job's rate, and the ETA drawn from it, say
 * how fast it goes when it goes, not how long it waited. Pure: the job's view and its tests.
 */
import type { ControlEntry } from '../store/redrive-job-store';

/** The paused intervals of a control log, [from, to) in epoch ms; one still paused runs to `now`. */
export function pausedIntervals(controlLog: readonly Pick<ControlEntry, 'action' | 'at'>[], now: number): [number, number][] {
  const intervals: [number, number][] = [];
  let pausedAt: number | null = null;
  for (const entry of controlLog) {
    const at = Date.parse(entry.at);
    if (!Number.isFinite(at)) continue;
    if (entry.action === 'pause' || entry.action === 'halt') pausedAt ??= at;
    else if (pausedAt !== null) {
      // resume goes on; abort and fail end the job: either way the pause is over.
      intervals.push([pausedAt, at]);
      pausedAt = null;
    }
  }
  if (pausedAt !== null) intervals.push([pausedAt, Math.max(pausedAt, now)]);
  return intervals;
}

/** Seconds between `from` and `to` (ISO) the job was not paused. */
export function activeSeconds(controlLog: readonly Pick<ControlEntry, 'action' | 'at'>[], from: string, to: string): number {
  const start = Date.parse(from);
  const end = Date.parse(to);
  if (!(end > start)) return 0;
  const paused = pausedIntervals(controlLog, end).reduce((sum, [a, b]) => sum + Math.max(0, Math.min(b, end) - Math.max(a, start)), 0);
  return Math.max(0, end - start - paused) / 1000;
}

/**
 * Items per second over the running time between the first and the latest processed item
 * (the first opens the span, so n items make n − 1 intervals); null until two items and a
 * running span exist.
 */
export function achievedRate(
  processed: number,
  firstProcessedAt: string | null | undefined,
  lastProcessedAt: string | null | undefined,
  controlLog: readonly Pick<ControlEntry, 'action' | 'at'>[],
): number | null {
  if (processed < 2 || !firstProcessedAt || !lastProcessedAt) return null;
  const seconds = activeSeconds(controlLog, firstProcessedAt, lastProcessedAt);
  return seconds > 0 ? (processed - 1) / seconds : null;
}
