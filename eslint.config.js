// Lint: TypeScript rules everywhere, and determinism guards for workflow code, which
// runs in Temporal's sandbox and must not reach Node, the network or the database.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', '.data/**', '.tools/**', 'bench/results/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['node:*', 'fs', 'path', 'crypto', 'http', 'https', 'net', 'child_process'], message: 'Workflow code is deterministic: no Node modules.' },
          { group: ['pg', 'hono', 'hono/*', '@hono/*', 'pino', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'], message: 'Workflow code may not reach I/O libraries.' },
          { group: ['../activities/*', '../store/*', '../api/*', '../service/*'], allowTypeImports: true, message: 'Import activities and stores with `import type` only.' },
        ],
      }],
    },
  },
);
