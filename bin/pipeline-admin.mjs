#!/usr/bin/env node
// The operator CLI: `npx pipeline-admin --help`. Runs the compiled CLI (dist/cli.js, written by
// `npm run build`). In a development checkout not built yet, it runs the TypeScript source through
// tsx (a devDependency) instead, and says so.
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/cli.js', import.meta.url);
if (existsSync(compiled)) {
  await import(compiled.href);
} else {
  let register;
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    process.stderr.write('pipeline-admin: dist/cli.js is missing: run `npm run build` first\n');
    process.exit(2);
  }
  process.stderr.write('pipeline-admin: dist/cli.js is missing (run `npm run build`); running the source through tsx\n');
  register();
  await import('../src/cli/main.ts');
}
