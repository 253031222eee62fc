/**
 * The test run's shared Temporal dev server keeps its own output in a file (test/global-setup.ts),
 * which `.ci/run` prints the end of when a run fails: a failure on that server (a connection it
 * dropped under a long poll, CI s59a) can then be read after the run, not only guessed at.
 */
import { readFileSync } from 'node:fs';
import { expect, inject, it } from 'vitest';

it("keeps the shared dev server's own output, its banner naming the port the tests use", () => {
  const port = inject('temporalAddress').split(':').at(-1);
  const output = readFileSync(inject('temporalOutputFile'), 'utf8');
  expect(output).toMatch(new RegExp(`Temporal Server:\\s+\\S+:${port}\\b`));
  // As the server wrote them: a JSON line keeps all its fields, not only the level and message.
  for (const line of output.split('\n').filter((l) => l.startsWith('{')))
    expect(Object.keys(JSON.parse(line))).toEqual(expect.arrayContaining(['time', 'level', 'msg']));
});
