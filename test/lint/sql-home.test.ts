/**
 * SQL lives in `src/store/` (the worker kit's own store is its package's, packages/worker-kit/): every
 * other module asks a store. This test reads every source file of src/ outside it,
 * with comments removed, and fails on anything that looks like a SQL statement or a raw
 * `query(` call, naming the file and the line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const src = join(root, 'src');
const SQL_HOMES = ['src/store/'];

const STATEMENT =
  /\b(SELECT\b[\s\S]{0,400}?\bFROM\s+[a-z_]+|INSERT\s+INTO\s+[a-z_]+|UPDATE\s+[a-z_]+\s+SET|DELETE\s+FROM\s+[a-z_]+|CREATE\s+(?:UNIQUE\s+)?(?:TABLE|INDEX)|ALTER\s+TABLE)\b/;
const RAW_QUERY = /\.(query|exec)\s*(<[^>]*>)?\s*\(\s*[`'"]/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Block and line comments blanked out (line numbers kept), so prose about SQL is not SQL. */
function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, (block) => block.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** `file:line: text` of each statement or raw query outside the SQL homes. */
function sqlOutsideStore(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of sourceFiles(src)) {
    const name = relative(root, file).split(sep).join('/');
    if (SQL_HOMES.some((home) => name.startsWith(home))) continue;
    const text = withoutComments(readFileSync(file, 'utf8'));
    const hits: string[] = [];
    for (const pattern of [STATEMENT, RAW_QUERY]) {
      const global = new RegExp(pattern.source, 'g');
      for (const match of text.matchAll(global)) {
        const line = text.slice(0, match.index).split('\n').length;
        hits.push(`${name}:${line}: ${match[0].split('\n')[0].slice(0, 80)}`);
      }
    }
    if (hits.length > 0) found.set(name, hits);
  }
  return found;
}

describe('SQL lives only in src/store/', () => {
  const found = sqlOutsideStore();

  it('no other module writes SQL or calls query() itself', () => {
    expect([...found.values()].flat()).toEqual([]);
  });

  it('notices a statement and a raw query when there is one', () => {
    expect(STATEMENT.test("db.query(`UPDATE execution_record SET status = 'FAILED'`)")).toBe(true);
    expect(STATEMENT.test('SELECT count(*) AS n FROM execution_dlq')).toBe(true);
    expect(RAW_QUERY.test("this.db.query<{ n: number }>('SELECT 1')")).toBe(true);
    expect(STATEMENT.test('one conditional UPDATE whose WHERE names the transition')).toBe(false);
  });
});

describe('the store and the configuration stand on their own', () => {
  const imports = (file: string) => [...readFileSync(join(root, file), 'utf8').matchAll(/^import\s[^;]*?from\s+'([^']+)'/gm)].map((match) => match[1]);

  it('src/store/ imports nothing from the layers above it (pure modules such as spec-words are fine)', () => {
    const layersAbove = ['../activities/', '../service/', '../api/', '../temporal/', '../transports/', '../pipeline/', '../config/'];
    const above = sourceFiles(join(src, 'store'))
      .map((file) => relative(root, file).split(sep).join('/'))
      .flatMap((file) =>
        imports(file)
          .filter((from) => layersAbove.some((layer) => from.startsWith(layer)))
          .map((from) => `${file} imports ${from}`),
      );
    expect(above).toEqual([]);
  });

  it('rows in src/store/ are typed snake_case interfaces, never Record<string, any> or any', () => {
    const untyped = sourceFiles(join(src, 'store')).flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, index) => (/Record<string, any>|:\s*any\b|<any>/.test(line) ? [`${relative(root, file).split(sep).join('/')}:${index + 1}`] : [])),
    );
    expect(untyped).toEqual([]);
  });

  it('src/config/config.ts loads no DLQ provider (amqplib, the AWS SDK) to validate a URL', () => {
    expect(imports('src/config/config.ts').filter((from) => from.startsWith('../dlq/') && from !== '../dlq/urls')).toEqual([]);
  });
});
