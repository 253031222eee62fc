/** docs/layout.md (the README's map points at it) names every folder and top-level file of src/, and nothing that is not there. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const section = readFileSync(join(root, 'docs', 'layout.md'), 'utf8');
const entries = readdirSync(join(root, 'src'), { withFileTypes: true });

describe('docs/layout.md', () => {
  it('names every folder of src/, and no folder that does not exist', () => {
    const folders = entries.filter((e) => e.isDirectory()).map((e) => `src/${e.name}/`);
    const named = [...section.matchAll(/`(src\/[a-z-]+\/)`/g)].map((m) => m[1]);
    expect([...new Set(named)].sort()).toEqual(folders.sort());
  });

  it('names every top-level source file of src/', () => {
    const files = entries.filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')).map((e) => e.name);
    const missing = files.filter((name) => !section.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });
});
