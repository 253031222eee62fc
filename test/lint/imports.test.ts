/**
 * The import graph of src/ (every `import` / `export … from` / `import()` of a relative
 * module, read with the TypeScript parser): no circle among the modules' run-time imports,
 * no module of src/service/ importing src/api/ (the composition root, src/runtime.ts, builds
 * the app from the API's entry points and the services it serves), nothing in src/store/
 * importing src/dlq/ logic, src/contract/ pure
 * (it imports no I/O: no store, service, api, Temporal or Node I/O module), and the step
 * attempt's rules (src/activities/step-rules.ts) importing only pure modules at run time.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const src = join(root, 'src');

interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** `src/x/y.ts` for a relative specifier, or the bare package name. */
function resolveSpecifier(file: string, specifier: string): string {
  if (!specifier.startsWith('.')) return specifier;
  const base = resolve(dirname(file), specifier);
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts')]) {
    if (candidate.endsWith('.ts') && existsSync(candidate)) return relative(root, candidate);
  }
  return relative(root, base);
}

function edgesOf(file: string): Edge[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const edges: Edge[] = [];
  const from = relative(root, file);
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = ts.isImportDeclaration(node) ? node.importClause : undefined;
      const named = clause?.namedBindings && ts.isNamedImports(clause.namedBindings) ? clause.namedBindings.elements : undefined;
      const typeOnly = ts.isImportDeclaration(node)
        ? Boolean(clause?.isTypeOnly || (named && named.length > 0 && !clause?.name && named.every((element) => element.isTypeOnly)))
        : node.isTypeOnly;
      edges.push({ from, to: resolveSpecifier(file, node.moduleSpecifier.text), typeOnly });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && ts.isStringLiteral(node.arguments[0])) {
      edges.push({ from, to: resolveSpecifier(file, node.arguments[0].text), typeOnly: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return edges;
}

const edges = sourceFiles(src).flatMap(edgesOf);

/** Circles among run-time imports (Tarjan's strongly connected components of more than one module, or a self-import). */
function circles(): string[][] {
  const graph = new Map<string, string[]>();
  for (const edge of edges.filter((e) => !e.typeOnly && e.to.startsWith('src/'))) graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let counter = 0;
  const connect = (node: string) => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) connect(node);
  return found;
}

const crossing = (fromDir: string, toDir: string, allowed: (edge: Edge) => boolean = () => false) =>
  edges.filter((e) => e.from.startsWith(fromDir) && e.to.startsWith(toDir) && !allowed(e)).map((e) => `${e.from} -> ${e.to}`);

describe('the import graph of src/', () => {
  it('reads the graph (a sanity check that the parser finds imports)', () => {
    expect(edges.length).toBeGreaterThan(300);
    expect(edges).toContainEqual({ from: 'src/api/app.ts', to: 'src/api/problem.ts', typeOnly: false });
  });

  it('has no circle among run-time imports', () => {
    expect(circles()).toEqual([]);
  });

  it('service/ does not import api/ (the composition root, src/runtime.ts, composes them)', () => {
    expect(crossing('src/service/', 'src/api/')).toEqual([]);
  });

  it('store/ does not import dlq/ logic (types only)', () => {
    expect(crossing('src/store/', 'src/dlq/', (e) => e.typeOnly)).toEqual([]);
  });

  it('contract/ is pure: no store, service, api, Temporal, database or network module', () => {
    const io =
      /^(src\/(store|service|api|activities|workflows|temporal|dlq|transports)\/|pg$|@temporalio\/|hono|node:(fs|net|http|child_process)|amqplib|@aws-sdk\/)/;
    expect(edges.filter((e) => e.from.startsWith('src/contract/') && !e.typeOnly && io.test(e.to)).map((e) => `${e.from} -> ${e.to}`)).toEqual([]);
  });

  it("the step attempt's rules (activities/step-rules.ts) are pure: their run-time imports are pure modules only", () => {
    const pure = ['src/ids.ts', 'src/activities/step-failure.ts'];
    expect(edges.filter((e) => e.from === 'src/activities/step-rules.ts' && !e.typeOnly && !pure.includes(e.to)).map((e) => e.to)).toEqual([]);
  });
});
