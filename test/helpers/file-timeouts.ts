/**
 * Set-up file for every test file: vitest's testTimeout and hookTimeout for the file's tests
 * and hooks are the project's quiet-machine bases (`inject('baseTimeouts')`, from
 * vitest.config.ts) stretched by the machine's time scale as it is when the file starts, not
 * as it was when the config loaded. A suite that starts on a quiet machine and then gets
 * neighbours (two CI runs side by side: time scale 1.2 at the start, 5 to 8 a few minutes in)
 * gives its later files the room their own `scaled` waits already have. These timeouts only stop
 * a hang; they never assert how fast something happened.
 */
import { inject, vi } from 'vitest';
import { scaled } from './time-scale';

/** A project's timeouts on a quiet machine, in milliseconds. */
export interface BaseTimeouts {
  testMs: number;
  hookMs: number;
}

declare module 'vitest' {
  export interface ProvidedContext {
    baseTimeouts: BaseTimeouts;
  }
}

const base = inject('baseTimeouts');
if (base) vi.setConfig({ testTimeout: scaled(base.testMs), hookTimeout: scaled(base.hookMs) });
