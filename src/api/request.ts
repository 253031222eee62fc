/**
 * Request reading with clear 4xx answers: media type (415), size (413, enforced while
 * streaming by middleware/body-limits.ts), JSON syntax
 * and schema (400, with zod's issues but never the offending values), path ids (400),
 * query strings (400) and opaque cursors (400).
 */
import type { Context } from 'hono';
import type { z } from 'zod';
import { PipelineError, ValidationError } from '../errors';
import { isValidId } from '../ids';
import { BodyTooLargeError } from './middleware/body-limits';

export const MAX_BODY_BYTES = 64 * 1024;

function issuesOf(error: z.ZodError) {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), code: issue.code, message: issue.message }));
}

export async function readJson<S extends z.ZodType>(c: Context, schema: S, maxBytes = MAX_BODY_BYTES): Promise<z.output<S>> {
  const type = c.req.header('content-type') ?? '';
  if (!/^application\/([a-z0-9.+-]*\+)?json\s*(;.*)?$/i.test(type)) {
    throw new PipelineError('Content-Type must be application/json', 'UNSUPPORTED_MEDIA_TYPE', 415);
  }
  // The bodyLimits middleware stopped reading past the limit; this only guards a route mounted without it.
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  if (bytes.byteLength > maxBytes) throw new BodyTooLargeError(maxBytes);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new PipelineError('body is not valid UTF-8 JSON', 'INVALID_JSON', 400);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ValidationError('body does not match the schema', issuesOf(parsed.error));
  return parsed.data;
}

export function pathId(c: Context, name: string): string {
  const value = c.req.param(name) ?? '';
  if (!isValidId(value)) {
    throw new PipelineError(`${name} must be 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit`, 'INVALID_ID', 400, { parameter: name });
  }
  return value;
}

export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw new ValidationError('query string does not match the schema', issuesOf(parsed.error));
  return parsed.data;
}

/** A timestamp as this API writes it (`toISOString()`, years 0001–9999: Postgres has no year 0), so Postgres reads it back. */
export function isIsoTimestamp(value: unknown): value is string {
  return typeof value === 'string' && /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value) && !Number.isNaN(Date.parse(value)) && new Date(value).toISOString() === value;
}

/** A row id as this API writes it in a cursor: a positive safe integer. */
export function isRowId(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor<T>(cursor: string | undefined, check: (value: any) => value is T): T | undefined {
  if (cursor === undefined) return undefined;
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (check(value)) return value;
  } catch {
    // fall through
  }
  throw new PipelineError('cursor is not one this API returned', 'INVALID_CURSOR', 400);
}
