/**
 * "Storable" text and JSON: what Postgres `text` and `jsonb` accept. JavaScript strings may
 * hold NUL (`\u0000`, refused by both) and unpaired surrogates (`\ud800`: refused by
 * `jsonb`, silently replaced in `text`), so every string and JSON value a request asks us to
 * store is checked here, once, and refused with a 400 naming the field instead of failing
 * in the database as a 500.
 *
 *   z.object({ reason: storableText(z.string().min(1)), input: StorableJson })
 */
import { z } from 'zod';

export const UNSTORABLE_MESSAGE = 'must not contain NUL (\\u0000) or unpaired UTF-16 surrogates';

// A NUL, a high surrogate not followed by a low one, or a low one not preceded by a high one.
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** No NUL, no unpaired surrogate. */
export function isStorableString(value: string): boolean {
  return !UNSTORABLE.test(value);
}

/**
 * The path of the first string (value or object key) that cannot be stored, or null.
 * Inside a JSON value the path is positional (array index, or the member's position in
 * its object), so an answer never echoes a caller's key names.
 */
export function findUnstorable(value: unknown, path: number[] = []): number[] | null {
  if (typeof value === 'string') return isStorableString(value) ? null : path;
  if (value === null || typeof value !== 'object') return null;
  const entries: [string, unknown][] = Array.isArray(value) ? value.map((item, i) => [String(i), item]) : Object.entries(value);
  for (let i = 0; i < entries.length; i++) {
    const [key, item] = entries[i];
    if (!isStorableString(key)) return [...path, i];
    const found = findUnstorable(item, [...path, i]);
    if (found) return found;
  }
  return null;
}

/**
 * The same rule as a JSON Schema pattern, for the OpenAPI document: no NUL and no
 * surrogate code point. JSON Schema reads patterns by code point (ECMA-262 with the `u`
 * flag, as Python's `re` does), so a pair that makes one character is not a surrogate
 * there, and only an unpaired one is refused.
 */
export const STORABLE_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$';
/** Not only white space: what a `.trim().min(1)` field accepts, as a pattern. */
export const NOT_BLANK_PATTERN = '\\S';

/** Adds `patterns` to a rendered schema: as `pattern` when it has none, else alongside in `allOf`. */
function withPatterns(jsonSchema: Record<string, unknown>, patterns: string[]) {
  const all = [...(typeof jsonSchema.pattern === 'string' ? [jsonSchema.pattern] : []), ...patterns];
  delete jsonSchema.pattern;
  if (all.length === 1) jsonSchema.pattern = all[0];
  else jsonSchema.allOf = [...((jsonSchema.allOf as unknown[]) ?? []), ...all.map((pattern) => ({ pattern }))];
}

/**
 * A string schema whose value can be stored in a `text` column; the OpenAPI document says
 * so by a pattern. `notBlank`: the schema trims before its minimum length, so a value of
 * only white space is refused, and the document says that too.
 */
export function storableText<S extends z.ZodType<string>>(schema: S, options: { notBlank?: boolean } = {}): S {
  const patterns = [STORABLE_PATTERN, ...(options.notBlank ? [NOT_BLANK_PATTERN] : [])];
  return schema
    .refine(isStorableString, { message: UNSTORABLE_MESSAGE })
    .meta({ override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => withPatterns(jsonSchema, patterns) }) as unknown as S;
}

/** How deeply a stored JSON value may nest: far beyond any real payload, far below a stack overflow. */
export const MAX_JSON_DEPTH = 128;

/** Whether `value` nests arrays/objects deeper than `limit`, found without recursion (the input is the caller's). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!;
    if (item === null || typeof item !== 'object') continue;
    if (depth >= limit) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return false;
}

/** Any JSON value that can be stored in a `jsonb` column; the issue's path gives the bad string's position. */
export const StorableJson = z
  .unknown()
  .superRefine((value, ctx) => {
    if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
      ctx.addIssue({ code: 'custom', message: `must not nest arrays or objects more than ${MAX_JSON_DEPTH} levels deep` });
      return;
    }
    const path = findUnstorable(value);
    if (path) ctx.addIssue({ code: 'custom', path, message: `${UNSTORABLE_MESSAGE} (path: positions of array items and object members)` });
  })
  .meta({
    description: `any JSON value that Postgres can store: no text in it (member names included) with NUL or an unpaired UTF-16 surrogate, nested at most ${MAX_JSON_DEPTH} levels`,
  });
