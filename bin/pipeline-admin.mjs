#!/usr/bin/env node
// The operator CLI: `npx pipeline-admin --help`. Runs the compiled CLI (dist/cli.js, written by
// `npm run build`). In a development checkout not built yet, it runs the TypeScript source through
// tsx (a devDependency) instead, and says so; a build older than src/cli/ is run with a warning.
import { existsSync, readdirSync, statSync } from 'node:fs';

const compiled = new URL('../dist/cli.js', import.meta.url);
const source = new URL('../src/cli/', import.meta.url);

/** In a development checkout: whether a CLI source file changed after the build (dist/ would run old code). */
function staleBuild() {
  if (!existsSync(source)) return false;
  const built = statSync(compiled).mtimeMs;
  return readdirSync(source, { recursive: true }).some((file) => String(file).endsWith('.ts') && statSync(new URL(String(file), source)).mtimeMs > built);
}

if (existsSync(compiled)) {
  if (staleBuild()) process.stderr.write('pipeline-admin: src/cli changed after dist/cli.js was built: this runs the old build (run `npm run build`)\n');
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
