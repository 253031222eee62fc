#!/usr/bin/env node
// The worker conformance checker: `npx pipeline-worker-check --help`. Runs the compiled checker
// (dist/worker-check.js, written by `npm run build`; an installed package ships it).
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/worker-check.js', import.meta.url);
if (!existsSync(compiled)) {
  process.stderr.write('pipeline-worker-check: dist/worker-check.js is missing: run `npm run build` first\n');
  process.exit(2);
}
await import(compiled.href);
