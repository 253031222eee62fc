/**
 * JSON values compared and corrected: an RFC 7396 JSON merge patch, the paths a correction
 * changed (JSON Pointers, RFC 6901), and a fingerprint of a value (its hash, never the value),
 * so an audit row, a dry run or a log can say what changed without carrying any of it.
 * Pure: no I/O.
 */
import { createHash } from 'node:crypto';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * RFC 7396 §2 MergePatch(target, patch): an object patch merges member by member (`null`
 * removes a member), anything else replaces the target whole. Neither argument is changed.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [name, value] of Object.entries(patch)) {
    if (value === null) delete result[name];
    else result[name] = mergePatch(result[name], value);
  }
  return result;
}

/** A JSON Pointer token: `~` and `/` escaped (RFC 6901 §3). */
const token = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The JSON Pointers where `after` differs from `before`, sorted: a member added, removed or
 * changed, down to the deepest object both sides have; an array or a value of another kind
 * counts as one change at its own path. `''` is the whole value.
 */
export function changedPaths(before: unknown, after: unknown, at = ''): string[] {
  if (isObject(before) && isObject(after)) {
    const names = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    return names.flatMap((name) =>
      !(name in before) || !(name in after) ? [`${at}/${token(name)}`] : changedPaths(before[name], after[name], `${at}/${token(name)}`),
    );
  }
  return canonicalJson(before) === canonicalJson(after) ? [] : [at];
}

/** JSON with object members in sorted order, so equal values serialise equally. `undefined` reads as null. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value))
    return `{${Object.keys(value)
      .sort()
      .filter((name) => value[name] !== undefined)
      .map((name) => `${JSON.stringify(name)}:${canonicalJson(value[name])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/** `sha256:` and 16 hex digits of SHA-256 over the canonical JSON: the same value, the same fingerprint; it says nothing of the value. */
export function fingerprint(value: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16)}`;
}
