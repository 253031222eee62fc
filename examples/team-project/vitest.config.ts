import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The engine tests start Temporal's time-skipping test server and bundle the workflows (seconds, longer the first time).
  test: { include: ['test/**/*.test.ts'], testTimeout: 120_000, hookTimeout: 180_000 },
});
