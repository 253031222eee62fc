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
import { BodyTooLargeError, isJsonMediaType, UnsupportedMediaTypeError } from './middleware/body-limits';

export const MAX_BODY_BYTES = 64 * 1024;

function issuesOf(error: z.ZodError) {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), code: issue.code, message: issue.message }));
}

export interface ReadJsonOptions {
  /** default 64 KiB */
  maxBytes?: number;
  /** the body may be left out: none, or an empty one (whatever its Content-Type), reads as `{}` */
  optional?: boolean;
}

export async function readJson<S extends z.ZodType>(c: Context, schema: S, options: ReadJsonOptions = {}): Promise<z.output<S>> {
  const maxBytes = options.maxBytes ?? MAX_BODY_BYTES;
  const json = isJsonMediaType(c.req.header('content-type'));
  if (!json && !options.optional) throw new UnsupportedMediaTypeError();
  // The bodyLimits middleware stopped reading past the limit; this only guards a route mounted without it.
  const bytes = new Uint8Array(await c.req.arrayBuffer());
  if (bytes.byteLength > maxBytes) throw new BodyTooLargeError(maxBytes);
  if (options.optional && bytes.byteLength === 0) return parseWith(schema, {}, 'body');
  if (!json) throw new UnsupportedMediaTypeError();
  // A number is read as JSON Schema reads it: `10.0` and `1e1` are the integer 10.
  let value: unknown;
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    throw new PipelineError('body is not valid UTF-8 JSON', 'INVALID_JSON');
  }
  return parseWith(schema, value, 'body');
}

function parseWith<S extends z.ZodType>(schema: S, value: unknown, what: 'body' | 'query string'): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ValidationError(`${what} does not match the schema`, issuesOf(parsed.error));
  return parsed.data;
}

export function pathId(c: Context, name: string): string {
  const value = c.req.param(name) ?? '';
  if (!isValidId(value)) {
    throw new PipelineError(`${name} must be 1–128 characters of [A-Za-z0-9._-], starting with a letter or digit`, 'INVALID_ID', { parameter: name });
  }
  return value;
}

export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  // `?dryRun=false&dryRun=true` has no single meaning: refuse it rather than pick one.
  const repeated = Object.entries(c.req.queries())
    .filter(([, values]) => values.length > 1)
    .map(([name]) => name);
  if (repeated.length > 0) {
    throw new ValidationError(
      'query string does not match the schema',
      repeated.map((name) => ({ path: name, code: 'ambiguous', message: 'must be given at most once' })),
    );
  }
  return parseWith(schema, c.req.query(), 'query string');
}

/** A timestamp as this API writes it (`toISOString()`, years 0001–9999: Postgres has no year 0), so Postgres reads it back. */
export function isIsoTimestamp(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    /^(?!0000)\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(value) &&
    !Number.isNaN(Date.parse(value)) &&
    new Date(value).toISOString() === value
  );
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
  throw new PipelineError('cursor is not one this API returned', 'INVALID_CURSOR');
}
