/**
 * Two CI suites share one Postgres server (issue 24's runs two and three at once), and each test
 * file has databases of its own. Postgres's server-wide views (`pg_stat_activity`, `pg_locks`)
 * see every database's sessions, so a query on them that is not filtered by the caller's
 * database counts, waits on or terminates another file's, or another suite's, connections. This
 * test reads every TypeScript and JavaScript file of the project (its string literals, through the
 * TypeScript parser) and fails on a statement reading one of those views without
 * `current_database()` in the same string, naming the file and the line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const DIRS = ['src', 'test', 'bench', 'examples', 'packages', 'scripts'];
const SKIP = new Set(['node_modules', 'dist', '.tools', '.test-output']);
const SERVER_WIDE = /\b(?:FROM|JOIN)\s+(?:pg_catalog\.)?(pg_stat_activity|pg_locks)\b/i;

function typescriptFiles(dir: string): string[] {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    if (SKIP.has(entry.name)) return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typescriptFiles(path);
    return /\.(ts|mts|js|mjs|cjs)$/.test(entry.name) ? [path] : [];
  });
}

/** The string literals of a source file (quoted and template strings, a template's `${}` parts as `${…}`), with the line each starts on, read by the TypeScript parser. */
function stringLiterals(name: string, text: string): { line: number; text: string }[] {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true);
  const found: { line: number; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    let literal: string | undefined;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) literal = node.text;
    else if (ts.isTemplateExpression(node)) literal = node.head.text + node.templateSpans.map((span) => `\${…}${span.literal.text}`).join('');
    if (literal !== undefined) found.push({ line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1, text: literal });
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** `file:line` of each statement on a server-wide view that is not filtered by the caller's database. */
function unfilteredReads(files: { name: string; text: string }[]): string[] {
  return files.flatMap(({ name, text }) =>
    stringLiterals(name, text)
      .filter((literal) => SERVER_WIDE.test(literal.text) && !/current_database\(\)/i.test(literal.text))
      .map((literal) => `${name}:${literal.line}: ${literal.text.replace(/\s+/g, ' ').slice(0, 120)}`),
  );
}

describe('server-wide Postgres views', () => {
  it('finds an unfiltered read, and passes a filtered one', () => {
    const found = unfilteredReads([
      { name: 'a.ts', text: 'const x = 1;\nawait db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = \'Lock\'");' },
      { name: 'b.ts', text: 'await db.query(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()`);' },
      { name: 'c.ts', text: "// the identity's lock\nawait db.query('SELECT mode FROM pg_locks');" },
      // A single backtick inside a string or regex does not hide what follows.
      { name: 'd.ts', text: "const q = '`'; const r = /`/;\nawait db.query(`SELECT l.mode FROM t JOIN pg_catalog.pg_locks l ON true WHERE x = ${1}`);" },
    ]);
    expect(found).toEqual([
      "a.ts:2: SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
      'c.ts:2: SELECT mode FROM pg_locks',
      'd.ts:2: SELECT l.mode FROM t JOIN pg_catalog.pg_locks l ON true WHERE x = ${…}',
    ]);
  });

  it('are read filtered by the caller’s database everywhere in the project', () => {
    const self = relative(root, import.meta.filename)
      .split(sep)
      .join('/');
    const files = DIRS.flatMap((dir) => typescriptFiles(join(root, dir)))
      .map((file) => ({ name: relative(root, file).split(sep).join('/'), text: readFileSync(file, 'utf8') }))
      .filter((file) => file.name !== self);
    expect(files.length).toBeGreaterThan(100);
    expect(unfilteredReads(files)).toEqual([]);
  });
});
