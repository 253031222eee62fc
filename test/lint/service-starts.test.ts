/**
 * Tests start the service (`src/main.ts`) only through `test/helpers/main-process.ts`: a clean
 * environment, a process group of its own that `cleanUpMainProcesses()` SIGKILLs, and (through
 * `startMainUp` / `startMainExpectingExit`) a fresh data dir and every port 0. A test that
 * spawned it by hand on the default ports failed whenever a developer's `npm start`, or
 * another CI run, held one of them (issue 24, s54). This test reads every test file with the
 * TypeScript parser and fails on a string literal naming `src/main.ts` outside the helper,
 * naming the file and the line (prose in comments is not a start).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const HELPER = 'test/helpers/main-process.ts';
const ENTRY = /(^|\/)src\/main\.ts$/;

/** Test code: every `*.test.ts` and everything under a `test/` folder, outside node_modules. */
function testFiles(dir: string, underTest = false): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path, underTest || entry.name === 'test');
    return entry.name.endsWith('.ts') && (underTest || entry.name.endsWith('.test.ts')) ? [path] : [];
  });
}

/** `line: text` of each string or template literal naming the service's entry point. */
function entryPointLiterals(name: string, text: string): string[] {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
  const hits: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) && ENTRY.test(node.text)) {
      hits.push(`${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${node.getText()}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return hits;
}

describe('tests start the service only through the main-process helper', () => {
  const files = testFiles(root).map((file) => relative(root, file).split(sep).join('/'));

  it('reads the test files, the helper among them', () => {
    expect(files).toContain(HELPER);
    expect(files).toContain('test/e2e/temporal-late.test.ts');
    expect(files).toContain('src/service/data-dir-lock.test.ts');
  });

  it('no test file but the helper names src/main.ts', () => {
    const found = files
      .filter((file) => file !== HELPER)
      .flatMap((file) => entryPointLiterals(file, readFileSync(join(root, file), 'utf8')).map((hit) => `${file}:${hit}`));
    expect(found).toEqual([]);
  });

  it('notices a hand-made start, and not prose about one', () => {
    expect(entryPointLiterals('x.ts', "spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'])")).toEqual(["1: 'src/main.ts'"]);
    expect(entryPointLiterals('x.ts', 'spawnSync(node, [`./src/main.ts`])')).toEqual(['1: `./src/main.ts`']);
    expect(entryPointLiterals('x.ts', '/** runs `src/main.ts` as npm start does */\nconst a = 1; // src/main.ts')).toEqual([]);
  });
});
