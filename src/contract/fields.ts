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

/** What parseDuration reads, as a pattern: `1500ms`, `30s`, `15m`, `1h`, `1d`, a bare number of ms, or ISO `PT1M30S`. */
export const DURATION_PATTERN =
  /^(?:\d{1,9}|\d{1,9}(?:\.\d{1,3})?(?:ms|s|m|h|d)|PT(?=\d)(?:\d{1,5}(?:\.\d{1,3})?H)?(?:\d{1,7}(?:\.\d{1,3})?M)?(?:\d{1,9}(?:\.\d{1,3})?S)?)$/;

/** A duration query parameter from `min` to `max` (ms), default `fallback`; parsed to milliseconds. */
export function durationParam(options: { min: number; max: number; fallback: string; name: string; range: string; example: string }) {
  return z
    .string()
    .regex(DURATION_PATTERN, `${options.name} must be a duration such as ${options.example} (ms, s, m, h, d, or ISO PT…)`)
    .default(options.fallback)
    .transform((value, ctx) => {
      const ms = parseDuration(value);
      if (ms === undefined || ms < options.min || ms > options.max) {
        ctx.addIssue({ code: 'custom', message: `${options.name} must be a duration from ${options.range}, e.g. ${options.example}` });
        return z.NEVER;
      }
      return ms;
    })
    .meta({ description: `a duration from ${options.range}, e.g. ${options.example}; default ${options.fallback}` });
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

/** The API's request bodies, and so an execution's input (a start's, or a corrected one), at most. */
export const MAX_BODY_BYTES = 64 * 1024;

/** zod's issues as a problem's `issues`: where and what, never the offending values. */
export function issuesOf(error: z.ZodError) {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), code: issue.code, message: issue.message }));
}
