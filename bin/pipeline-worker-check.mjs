#!/usr/bin/env node
// The worker conformance checker: `npx pipeline-worker-check --help`. Runs the TypeScript entry through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../src/worker-check/main.ts');
