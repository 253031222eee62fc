#!/usr/bin/env node
// The operator CLI: `npx pipeline-admin --help`. Runs the TypeScript entry through tsx's loader.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
