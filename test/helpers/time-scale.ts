/**
 * How much slower than a quiet machine this one runs: `PIPELINE_TEST_TIME_SCALE` (a number
 * ≥ 1, default 1), which .ci/run sets from the load average per core it sees. Every wait cap
 * of the tests (`until`, `retryUntilSuccess`, `Latch.wait`, the engine's `waitFor`), the
 * e2e tests' own deadlines and vitest's testTimeout/hookTimeout go through `scaled`, so a
 * loaded machine slows a test down without failing it. A cap only stops a hang; it never
 * asserts how fast something happened.
 */
function readScale(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PIPELINE_TEST_TIME_SCALE;
  if (raw === undefined || raw === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 1) throw new Error(`PIPELINE_TEST_TIME_SCALE=${raw}: must be a number of at least 1`);
  return value;
}

export const TIME_SCALE = readScale();

/** `ms` stretched by the machine's time scale. */
export function scaled(ms: number): number {
  return Math.round(ms * TIME_SCALE);
}
