// Lint: TypeScript rules everywhere (with type information, for promises nobody awaits),
// and determinism guards for workflow code, which runs in Temporal's sandbox and must not
// reach Node, the network or the database.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

/** Every Node built-in, bare and `node:`-prefixed (os, util, events, timers, stream, … included). */
const NODE_BUILTINS = [...new Set(builtinModules.flatMap((name) => [name, `${name}/*`, `node:${name}`, `node:${name}/*`]))];

/**
 * No `as` in the store and the dispatcher (but `as const`, and an `err` looked into): a row is
 * checked by its table's columns, so a cast could only hide a column that does not match.
 */
export const NO_ROW_CASTS = [
  {
    selector: "TSAsExpression:not([typeAnnotation.typeName.name='const']):not([expression.name='err'])",
    message: "No `as` here: a query row is read by its table's mapper (src/store/columns.ts readRow), never cast.",
  },
  { selector: 'TSTypeAssertion', message: "No type assertion here: a query row is read by its table's mapper (src/store/columns.ts readRow)." },
];
/** No type argument on a query: it would declare, unchecked, what the rows hold. */
export const NO_ROW_TYPE_ARGUMENTS = [
  {
    selector: 'CallExpression[callee.property.name=/^(query|prepared)$/][typeArguments]',
    message: "A query takes no type argument here: its rows are unknown until their table's mapper (src/store/columns.ts readRow) reads them.",
  },
];

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tools/**', 'bench/results/**', 'dist/**', 'packages/*/dist/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits loses its error and its ordering; `void` says it is deliberate.
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    // The CLI's answers are typed from the contract's response schemas (src/cli/client.ts, Answer<typeof Schema>): no `any` comes back.
    files: ['src/cli/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: NODE_BUILTINS, message: 'Workflow code is deterministic: no Node modules.' },
            {
              group: ['pg', 'hono', 'hono/*', '@hono/*', 'pino', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'],
              message: 'Workflow code may not reach I/O libraries.',
            },
            {
              group: ['../activities/*', '../store/*', '../api/*', '../service/*'],
              allowTypeImports: true,
              message: 'Import activities and stores with `import type` only.',
            },
          ],
        },
      ],
    },
  },
  {
    // The store boundary: a query's rows are read by their table's mapper (src/store/columns.ts
    // readRow), never cast or typed by a type argument (test/lint/store-rows.test.ts proves it bites).
    files: ['src/store/**/*.ts', 'src/temporal/dispatcher.ts'],
    ignores: ['**/*.test.ts'],
    rules: { 'no-restricted-syntax': ['error', ...NO_ROW_CASTS, ...NO_ROW_TYPE_ARGUMENTS] },
  },
  {
    // The driver seam itself hands rows on untyped; it still casts nothing but errors.
    files: ['src/store/db.ts'],
    rules: { 'no-restricted-syntax': ['error', ...NO_ROW_CASTS] },
  },
  {
    // The worker kit is a package of its own (test/lint/worker-kit-package.test.ts holds it to this too).
    files: ['packages/worker-kit/src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../*', 'pipeline-orchestrator', 'pipeline-orchestrator/*'],
              message: 'The worker kit imports only its own modules and its declared dependencies.',
            },
          ],
        },
      ],
    },
  },
);
