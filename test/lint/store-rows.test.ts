/**
 * The store boundary is typed by its mappers, and the lint keeps it so: under src/store/ and in
 * the dispatcher, a query's rows are never cast with `as` nor typed by a type argument on
 * `query`/`prepared` (eslint.config.js, `no-restricted-syntax`). This test runs the project's own
 * ESLint config over the real files (clean) and over planted casts (each caught, on its line).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const eslint = new ESLint({ cwd: root });

/** The no-restricted-syntax findings of `code` linted as the file at `path`, as `line: message`. */
async function findings(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, path) });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => `${m.line}: ${m.message}`);
}

/** `path`'s text with `from` replaced by `to` (which must occur once), and the line it is on. */
function planted(path: string, from: string, to: string): { code: string; line: number } {
  const text = readFileSync(join(root, path), 'utf8');
  const at = text.indexOf(from);
  expect(at, `${from} in ${path}`).toBeGreaterThan(-1);
  expect(text.indexOf(from, at + 1), `${from} once in ${path}`).toBe(-1);
  return { code: text.slice(0, at) + to + text.slice(at + from.length), line: text.slice(0, at).split('\n').length };
}

describe('no casts on query rows in the store and the dispatcher', () => {
  it('finds none in the files as they are', async () => {
    for (const path of ['src/store/dispatch-store.ts', 'src/store/execution-store.ts', 'src/store/db.ts', 'src/temporal/dispatcher.ts']) {
      expect(await findings(path, readFileSync(join(root, path), 'utf8')), path).toEqual([]);
    }
  }, 120_000);

  it("fails on the dispatcher's old `claimed.spec as DispatchSpec`", async () => {
    const { code, line } = planted(
      'src/temporal/dispatcher.ts',
      'claimed.record, dispatchId, claimed.spec,',
      'claimed.record, dispatchId, claimed.spec as DispatchSpec,',
    );
    expect(await findings('src/temporal/dispatcher.ts', code)).toEqual([
      `${line}: No \`as\` here: a query row is read by its table's mapper (src/store/columns.ts readRow), never cast.`,
    ]);
  }, 60_000);

  it('fails on a row cast and on a type argument that declares the rows, naming the line', async () => {
    const cast = planted('src/store/dispatch-store.ts', 'record: toRecord(row)', 'record: toRecord(row as ExecutionRecordRow)');
    expect(await findings('src/store/dispatch-store.ts', cast.code)).toEqual([
      `${cast.line}: No \`as\` here: a query row is read by its table's mapper (src/store/columns.ts readRow), never cast.`,
    ]);
    const typed = planted('src/store/dispatch-store.ts', 'const due = await this.db.query(', 'const due = await this.db.query<DispatchRow>(');
    expect(await findings('src/store/dispatch-store.ts', typed.code)).toEqual([
      `${typed.line}: A query takes no type argument here: its rows are unknown until their table's mapper (src/store/columns.ts readRow) reads them.`,
    ]);
  }, 60_000);

  it('leaves `as const` and code outside the store alone', async () => {
    const constant = planted(
      'src/store/dispatch-store.ts',
      '{ tenant_id: true, execution_id: true, dispatch_id: true }',
      '{ tenant_id: true, execution_id: true, dispatch_id: true } as const',
    );
    expect(await findings('src/store/dispatch-store.ts', constant.code)).toEqual([]);
    const service = 'src/service/redrive.ts';
    const outside = planted(service, 'dispatchSpec: spec,', 'dispatchSpec: spec as unknown,');
    expect(await findings(service, outside.code)).toEqual([]);
  }, 60_000);
});
