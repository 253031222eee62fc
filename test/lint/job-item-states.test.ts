/**
 * A bulk job item's states are spec words (JOB_ITEM_STATES in src/spec-words.ts) that the
 * store writes in SQL: the table's CHECK constraint allows exactly them, and every state a
 * statement in src/store/ or a migration compares with or sets is one of them, so a renamed
 * or new state cannot live in one SQL string only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JOB_ITEM_STATES } from '../../src/spec-words';

const store = join(import.meta.dirname, '..', '..', 'src', 'store');
const sources = [
  ...readdirSync(store)
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
    .map((name) => join(store, name)),
  ...readdirSync(join(store, 'migrations')).map((name) => join(store, 'migrations', name)),
].map((path) => ({ path, text: readFileSync(path, 'utf8') }));

/** The quoted words after `state =`, `state <>`, `state IN (…)` and `THEN` in a `state = CASE`. */
function statesUsed(text: string): string[] {
  const words: string[] = [];
  for (const match of text.matchAll(/\bstate\s*(?:=|<>)\s*'([A-Za-z_]+)'/g)) words.push(match[1]);
  for (const match of text.matchAll(/\bstate\s+IN\s*\(([^)]*)\)/g)) words.push(...[...match[1].matchAll(/'([A-Za-z_]+)'/g)].map((m) => m[1]));
  for (const match of text.matchAll(/\bstate\s*=\s*CASE\b[^;]*?\bTHEN\s*'([A-Za-z_]+)'/g)) words.push(match[1]);
  return words;
}

describe('job item states', () => {
  it("the table's CHECK constraint allows exactly JOB_ITEM_STATES", () => {
    const check = sources.map((s) => s.text.match(/redrive_job_item_state_check CHECK \(state IN \(([^)]*)\)\)/)).find(Boolean);
    expect(check).toBeTruthy();
    expect([...check![1].matchAll(/'([A-Z_]+)'/g)].map((m) => m[1]).sort()).toEqual([...JOB_ITEM_STATES].sort());
  });

  it('every state the store compares with or sets is one of JOB_ITEM_STATES', () => {
    const used = sources.flatMap(({ path, text }) => statesUsed(text).map((word) => ({ path, word })));
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter(({ word }) => !(JOB_ITEM_STATES as readonly string[]).includes(word))).toEqual([]);
  });
});
