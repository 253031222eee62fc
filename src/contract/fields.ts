/**
 * Field schemas the requests share, each stating in the OpenAPI document every rule its
 * handler enforces (so a value the document allows is not refused, and a value Postgres
 * would refuse never reaches it).
 */
import { z } from 'zod';
import { parseDuration } from '../config/duration';
import { TERMINAL_REASONS } from '../spec-words';

export const TerminalReasonSchema = z.enum(TERMINAL_REASONS).meta({ id: 'TerminalReason' });

/** An `errorCode` as a query or selection filter: 1–64 of [A-Za-z0-9_.-]. */
export const ERROR_CODE_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * An ISO 8601 timestamp with `Z` or an offset that Postgres accepts as data: years 0001–9999
 * (Postgres has no year 0) and offsets within ±15:59.
 */
export const IsoTime = z.iso
  .datetime({ offset: true })
  .regex(/^(?!0000)\d{4}-.*(?:Z|[+-](?:0\d|1[0-5]):[0-5]\d)$/, 'year 0001–9999 and an offset within ±15:59 (Postgres refuses others)')
  .meta({ description: 'ISO 8601 timestamp, e.g. 2026-11-21T12:00:00Z; year 0001–9999, offset within ±15:59' });

/** A regex alternative (no anchors) matching the decimal integers `lo`–`hi`, written without leading zeros. */
export function integerRangePattern(lo: number, hi: number): string {
  if (!Number.isSafeInteger(lo) || !Number.isSafeInteger(hi) || lo < 0 || lo > hi) throw new RangeError(`integerRangePattern: bad range ${lo}–${hi}`);
  const parts: string[] = [];
  let start = lo;
  while (start <= hi) {
    // The widest block [start, start + 10^k · count - 1] that keeps start's leading digit in the pattern.
    const digits = String(start).length;
    let k = 0;
    while (k + 1 < digits && start % 10 ** (k + 1) === 0 && start + 10 ** (k + 1) - 1 <= hi) k++;
    const size = 10 ** k;
    const digit = Math.floor(start / size) % 10;
    let count = 1;
    while (digit + count <= 9 && start + (count + 1) * size - 1 <= hi) count++;
    const high = Math.floor(start / size / 10);
    const prefix = high === 0 ? '' : String(high);
    parts.push(`${prefix}${count === 1 ? digit : `[${digit}-${digit + count - 1}]`}${k ? `\\d{${k}}` : ''}`);
    start += count * size;
  }
  return parts.length === 1 ? parts[0] : `(?:${parts.join('|')})`;
}

const UNITS: [prefix: string, suffix: string, ms: number][] = [
  ['', '', 1],
  ['', 'ms', 1],
  ['', 's', 1000],
  ['', 'm', 60_000],
  ['', 'h', 3_600_000],
  ['', 'd', 86_400_000],
  ['PT', 'S', 1000],
  ['PT', 'M', 60_000],
  ['PT', 'H', 3_600_000],
];

/**
 * A duration from `minMs` to `maxMs` as a pattern the OpenAPI document can state: a whole number
 * of one unit (`1500ms`, `30s`, `15m`, `1h`, `1d`, bare milliseconds, or ISO `PT15M`, `PT30S`,
 * `PT1H`) within the range, so a client reading the document knows which values are refused.
 */
export function durationRangePattern(minMs: number, maxMs: number): RegExp {
  const alternatives = UNITS.flatMap(([prefix, suffix, ms]) => {
    const lo = Math.ceil(minMs / ms);
    const hi = Math.floor(maxMs / ms);
    return lo <= hi ? [`${prefix}${integerRangePattern(lo, hi)}${suffix}`] : [];
  });
  return new RegExp(`^(?:${alternatives.join('|')})$`);
}

/** A duration query parameter from `min` to `max` (ms), default `fallback`; parsed to milliseconds. */
export function durationParam(options: { min: number; max: number; fallback: string; name: string; range: string; example: string }) {
  return z
    .string()
    .regex(
      durationRangePattern(options.min, options.max),
      `${options.name} must be a duration from ${options.range}: a whole number of ms, s, m, h or d, or ISO PT…S, PT…M, PT…H, e.g. ${options.example}`,
    )
    .default(options.fallback)
    .transform((value) => parseDuration(value) ?? Number.NaN)
    .meta({
      description: `a duration from ${options.range} (a whole number of ms, s, m, h or d, or ISO PT…S, PT…M, PT…H), e.g. ${options.example}; default ${options.fallback}`,
    });
}

/** `limit`: a whole number `min`–`max` (written as digits), default `fallback`. */
export function limitParam(fallback: number, max = 500) {
  if (max !== 500) throw new TypeError('limitParam: the pattern is written for 1–500');
  return z
    .string()
    .regex(/^(?:[1-9]\d?|[1-4]\d\d|500)$/, `must be a whole number from 1 to ${max}, e.g. 50`)
    .transform(Number)
    .pipe(z.number().int().min(1).max(max))
    .default(fallback)
    .meta({ description: `page size: a whole number from 1 to ${max}; default ${fallback}` });
}
