/**
 * Documents a reader of this repository has are the code, README.md and docs/: prose must
 * state a rule, not cite one from somewhere else ("DESIGN.md", "spec rule 3"), and must not
 * name behaviour the code replaced, and must not point to tracker issues ("issue 12"), which
 * a reader of the repository cannot open.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return files(path, ext);
    return ext.test(entry.name) ? [path] : [];
  });
}

const SOURCES = [join(root, 'README.md'), join(root, 'BENCHMARKS.md'), ...files(join(root, 'docs'), /\.md$/), ...files(join(root, 'src'), /(?<!\.test)\.ts$/)];

/** Phrases that point at documents this repository does not ship, or at replaced behaviour. */
const DRIFT: [RegExp, string][] = [
  [/DESIGN\.md/, 'cites DESIGN.md; state the rule'],
  [/\bspec(?:'s)? rule \d/i, 'cites a spec rule by number; state the rule'],
  [/\btriage rule \d/i, 'cites a triage rule by number; state the rule'],
  [/USE_EXISTING/, 'the start uses conflict policy FAIL'],
  [/\bissue #?\d+|\(#\d+\)/i, 'points to a tracker issue the reader cannot open; state the decision'],
];

describe('docs and comments state rules instead of citing documents the reader lacks', () => {
  it('no README, BENCHMARKS, docs/ or src/ text cites DESIGN.md, a numbered rule or a tracker issue, or names replaced behaviour', () => {
    const found = SOURCES.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => DRIFT.filter(([pattern]) => pattern.test(line)).map(([, why]) => `${relative(root, file)}:${index + 1}: ${why}`)),
    );
    expect(found).toEqual([]);
  });
});
