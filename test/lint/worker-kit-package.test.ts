/**
 * The worker kit (packages/worker-kit) stands on its own: every module it imports is one of its
 * own (a relative `./x.js`, which its NodeNext build needs), a Node built-in or a dependency its
 * package.json declares, so nothing of the orchestrator's src/ can slip in; the orchestrator
 * reaches it only through the package name; and the contract it keeps its own copy of (the
 * proto, the header names, the idempotency key) is the orchestrator's.
 */
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as kit from '@pipeline-orchestrator/worker-kit';
import { parseIdempotencyKey } from '../../src/ids';

const root = join(import.meta.dirname, '..', '..');
const kitRoot = join(root, 'packages', 'worker-kit');
const manifest = JSON.parse(readFileSync(join(kitRoot, 'package.json'), 'utf8')) as { name: string; dependencies: Record<string, string> };

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.') ? [] : tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module specifier a source imports, re-exports or loads with `import()`. */
function specifiers(text: string): string[] {
  const source = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const BUILTINS = new Set(builtinModules);

/** Why a kit module may not import `specifier`, or null when it may. */
function refused(specifier: string): string | null {
  if (specifier.startsWith('.')) {
    if (!/^\.\/[a-z0-9-]+\.js$/.test(specifier)) return 'a relative import must be a sibling module with its .js extension (./name.js)';
    return null;
  }
  if (specifier.startsWith('node:')) return BUILTINS.has(specifier.slice(5)) ? null : 'not a Node built-in';
  if (BUILTINS.has(specifier)) return 'import Node built-ins as node:name';
  const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0];
  return name in manifest.dependencies ? null : `${name} is not a dependency in packages/worker-kit/package.json`;
}

describe('the worker kit package', () => {
  const kitFiles = tsFiles(join(kitRoot, 'src'));

  it('imports only its own modules, Node built-ins and its declared dependencies (nothing of src/)', () => {
    expect(kitFiles.length).toBeGreaterThanOrEqual(8);
    const bad = kitFiles.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8')).flatMap((specifier) => {
        const why = refused(specifier);
        return why ? [`${relative(root, file)}: '${specifier}': ${why}`] : [];
      }),
    );
    expect(bad).toEqual([]);
  });

  it('notices an import of the orchestrator, an undeclared package or an extensionless sibling', () => {
    const text = [
      "import { parseIdempotencyKey } from '../../../src/ids';",
      "export { x } from 'pipeline-orchestrator';",
      "const zod = await import('zod');",
      "import { Deliveries } from './delivery';",
      "import { Deliveries as D } from './delivery.js';",
      "import * as grpc from '@grpc/grpc-js';",
    ].join('\n');
    expect(specifiers(text).map((specifier) => refused(specifier) !== null)).toEqual([true, true, true, true, false, false]);
  });

  it('declares every package it imports and no package it does not', () => {
    const used = new Set(
      kitFiles
        .flatMap((file) => specifiers(readFileSync(file, 'utf8')))
        .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
        .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0])),
    );
    expect(Object.keys(manifest.dependencies).sort()).toEqual([...used].sort());
  });

  it('is reached from the orchestrator through its package name only, never by a path into packages/', () => {
    const mine = ['src', 'test', 'examples', 'bench', 'scripts'].flatMap((dir) => tsFiles(join(root, dir)));
    const byPath = mine.flatMap((file) =>
      specifiers(readFileSync(file, 'utf8'))
        .filter(
          (specifier) =>
            !specifier.startsWith('@pipeline-orchestrator/worker-kit') && (specifier.includes('packages/worker-kit') || specifier.includes('/worker-kit/')),
        )
        .map((specifier) => `${relative(root, file).split(sep).join('/')}: '${specifier}'`),
    );
    expect(byPath).toEqual([]);
  });

  it('is the one home of the gRPC contract: the orchestrator loads the proto the kit ships', async () => {
    const { PROTO_PATH } = await import('../../src/transports/grpc-proto');
    expect(realpathSync(PROTO_PATH)).toBe(realpathSync(join(kitRoot, 'proto', 'transition_worker.proto')));
  });

  it('reads idempotency keys as the orchestrator writes them, and refuses what it refuses', () => {
    const keys = [
      'acme/order-1:3:1',
      'a/b:0:0',
      `${'t'.repeat(128)}/${'e'.repeat(128)}:999999999:999999999`,
      `${'t'.repeat(129)}/e:1:1`,
      'acme/order-1:3:1000000000',
      'order-1:3:1',
      'acme/order-1:3',
      '-acme/order-1:3:1',
      'acme/order 1:3:1',
      'acme/x/order-1:3:1',
      'acme/order.1_a-b:12:7',
      '',
    ];
    for (const key of keys) expect(kit.parseIdempotencyKey(key), key).toEqual(parseIdempotencyKey(key));
    expect(keys.filter((key) => kit.parseIdempotencyKey(key) !== null)).toHaveLength(4);
  });

  it("continues the orchestrator's trace as the orchestrator does (withRemoteParent, the same code)", () => {
    const withRemoteParent = (file: string) => {
      const source = readFileSync(file, 'utf8');
      const start = source.indexOf('export async function withRemoteParent');
      expect(start, file).toBeGreaterThanOrEqual(0);
      const end = source.indexOf('\n}\n', start);
      expect(end, file).toBeGreaterThan(start);
      return source.slice(start, end + 2);
    };
    expect(withRemoteParent(join(kitRoot, 'src', 'trace-context.ts'))).toBe(withRemoteParent(join(root, 'src', 'trace-context.ts')));
  });

  it('is named as the README says a worker team installs it', () => {
    expect(manifest.name).toBe('@pipeline-orchestrator/worker-kit');
    expect(readFileSync(join(kitRoot, 'README.md'), 'utf8')).toContain(`npm install ${manifest.name}`);
  });
});
