#!/usr/bin/env node
// The operator CLI: `npx pipeline-admin --help`. Runs the compiled CLI (dist/cli.js, written by
// `npm run build`; an installed package ships it), never TypeScript. In a development checkout, a
// build older than src/cli/ is run with a warning.
import { existsSync, readdirSync, statSync } from 'node:fs';

const compiled = new URL('../dist/cli.js', import.meta.url);
const source = new URL('../src/cli/', import.meta.url);

/** In a development checkout: whether a CLI source file changed after the build (dist/ would run old code). */
function staleBuild() {
  if (!existsSync(source)) return false;
  const built = statSync(compiled).mtimeMs;
  return readdirSync(source, { recursive: true }).some((file) => String(file).endsWith('.ts') && statSync(new URL(String(file), source)).mtimeMs > built);
}

if (!existsSync(compiled)) {
  process.stderr.write('pipeline-admin: dist/cli.js is missing: run `npm run build` first\n');
  process.exit(2);
}
if (staleBuild()) process.stderr.write('pipeline-admin: src/cli changed after dist/cli.js was built: this runs the old build (run `npm run build`)\n');
await import(compiled.href);
