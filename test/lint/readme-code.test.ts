/**
 * The README's "Writing a pipeline" and "Testing a pipeline" code is runnable as written: each
 * TypeScript block starts with a `// <file>` line naming the file it is, and that file in this
 * repository is the block byte for byte (a bare name lives in examples/readme/). `tsc` checks
 * those files (`npm run check`), examples/readme/readme.test.ts runs the pipelines in memory,
 * test/e2e/pipelines-module.test.ts starts the service with pipelines.ts, and the testing block
 * is a test of examples/invoices that `npm test` runs.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
/** The rest of "Writing a pipeline", which the README's section points at. */
const writing = readFileSync(join(root, 'docs', 'writing-pipelines.md'), 'utf8');

function section(title: string): string {
  const own = readme.split(/^## /m).find((part) => part.startsWith(`${title}\n`)) ?? '';
  return title === 'Writing a pipeline' ? `${own}\n${writing}` : own;
}

function tsBlocks(text: string): string[] {
  return [...text.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1]);
}

/** The repository file a block names on its first line, or null when it names none. */
function fileOf(block: string): string | null {
  const named = /^\/\/ ([\w./-]+\.ts)\n/.exec(block)?.[1];
  if (!named) return null;
  return named.includes('/') ? named : join('examples', 'readme', named);
}

describe('README code for authors', () => {
  for (const title of ['Writing a pipeline', 'Testing a pipeline']) {
    const blocks = tsBlocks(section(title));

    it(`"${title}": every TypeScript block is a file of this repository, as written`, () => {
      expect(blocks.length).toBeGreaterThan(0);
      for (const block of blocks) {
        const file = fileOf(block);
        expect(file, `a block of "${title}" names no file on its first line:\n${block.slice(0, 200)}`).not.toBeNull();
        expect(existsSync(join(root, file!)), `${file} does not exist`).toBe(true);
        expect(block, `${file} differs from its README block`).toBe(readFileSync(join(root, file!), 'utf8'));
      }
    });
  }

  it('finds the blocks it holds (orders.ts, pipelines.ts, the invoices test)', () => {
    const files = ['Writing a pipeline', 'Testing a pipeline'].flatMap((title) => tsBlocks(section(title)).map(fileOf));
    expect(files).toEqual(['examples/readme/orders.ts', 'examples/readme/pipelines.ts', 'examples/invoices/test/readme.test.ts']);
  });

  it('starts the service with the module the README writes', () => {
    expect(readFileSync(join(root, 'test', 'e2e', 'pipelines-module.test.ts'), 'utf8')).toContain("join('examples', 'readme', 'pipelines.ts')");
  });
});
