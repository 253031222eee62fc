import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../errors';
import { loadPipelinesModule } from './pipelines-module';

const dir = mkdtempSync(join(tmpdir(), 'pipelines-module-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let written = 0;
/** A module on disk with this body (plain objects: a pipeline is data plus functions). */
function moduleFile(body: string): string {
  const file = join(dir, `module-${++written}.mjs`);
  writeFileSync(file, body);
  return file;
}

const STEP = `{ name: 'greet', transport: 'LOCAL', run: (input) => input }`;
const fixtures = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'pipelines-module');

describe('loadPipelinesModule', () => {
  it('loads the default export of a TypeScript module written against the public package', async () => {
    const [greetings] = await loadPipelinesModule(join(import.meta.dirname, '..', '..', 'examples', 'readme', 'pipelines.ts'));
    expect(greetings).toMatchObject({ name: 'greetings', version: 1, fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/) });
    expect(greetings.steps.map((step) => step.name)).toEqual(['greet', 'shout']);
  });

  it('resolves a relative path against the working directory', async () => {
    const file = moduleFile(`export default { name: 'one', steps: [${STEP}] };`);
    const pipelines = await loadPipelinesModule(file.slice(dir.length + 1), dir);
    expect(pipelines.map((p) => [p.name, p.version])).toEqual([['one', 1]]);
  });

  it('calls an exported (async) function and reads `pipelines` when there is no default export', async () => {
    const file = moduleFile(`export const pipelines = async () => [{ name: 'a', steps: [${STEP}] }, { name: 'a', version: 2, steps: [${STEP}] }];`);
    expect((await loadPipelinesModule(file)).map((p) => [p.name, p.version])).toEqual([
      ['a', 1],
      ['a', 2],
    ]);
  });

  it.each([
    ['a missing file', () => join(dir, 'absent.ts'), /^pipeline\.pipelines-module: no file at .*absent\.ts$/],
    ['a module that does not load', () => moduleFile('export default ;'), /^pipeline\.pipelines-module: .*could not be loaded: /],
    [
      'a module exporting nothing usable',
      () => join(fixtures, 'nothing-usable.ts'),
      /exports neither a default export nor `pipelines` \(its exports: greeting\)/,
    ],
    ['an empty list', () => moduleFile('export default [];'), /exports no pipelines \(an empty list\)/],
    ['a value that is not a pipeline', () => moduleFile(`export default [{ name: 'x', steps: [${STEP}] }, 42];`), /pipeline 2 of 2 is 42, not a pipeline/],
    [
      'an invalid definition',
      () => moduleFile(`export default { name: 'x', steps: [{ ...${STEP}, name: 'no spaces' }] };`),
      /pipeline 1 of 1: pipeline "x": step name "no spaces" must match/,
    ],
    ['a function that throws', () => moduleFile(`export default () => { throw new Error('no credentials'); };`), /exports threw: no credentials/],
    ['a duplicate name and version', () => join(fixtures, 'duplicate.ts'), /exports pipeline "greetings" version 1 twice/],
  ])('refuses %s with a ConfigError naming the key', async (_, path, message) => {
    const failure = await loadPipelinesModule(path()).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toMatch(/^pipeline\.pipelines-module: /);
    expect((failure as Error).message).toMatch(message);
  });
});
