#!/usr/bin/env node
// The service as a command: `npx pipeline-orchestrator [start | migrate | check-config]`. Runs the
// compiled service (dist/orchestrator.js, written by `npm run build`; an installed package ships it).
import { existsSync } from 'node:fs';

const compiled = new URL('../dist/orchestrator.js', import.meta.url);
if (!existsSync(compiled)) {
  process.stderr.write('pipeline-orchestrator: dist/orchestrator.js is missing: run `npm run build` first\n');
  process.exit(2);
}
await import(compiled.href);
