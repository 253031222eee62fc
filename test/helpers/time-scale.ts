/**
 * How much slower than a quiet machine this one runs. Every wait cap of the tests (`until`,
 * `retryUntilSuccess`, `Latch.wait`, the engine's `waitFor`), the e2e tests' own deadlines,
 * per-test timeouts and vitest's testTimeout/hookTimeout go through `scaled`, so a loaded
 * machine slows a test down without failing it. A cap only stops a hang; it never asserts how
 * fast something happened.
 *
 * The factor is `PIPELINE_TEST_TIME_SCALE` (a number ≥ 1, default 1; .ci/run sets it from the
 * load it sees at the start, at most 10), or the 1-minute load average per core (capped at 10)
 * read when `scaled` is called, whichever is higher. The second part covers a suite that started
 * on a quiet machine and then got neighbours (a second CI run starting a minute later): the
 * deadlines it sets from then on grow with the load. vitest's own testTimeout and hookTimeout
 * are set as the config loads and again as each file starts (test/helpers/file-timeouts.ts).
 */
import { availableParallelism, loadavg } from 'node:os';

const MAX_SCALE = 10;

function readScale(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.PIPELINE_TEST_TIME_SCALE;
  if (raw === undefined || raw === '') return 1;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 1) throw new Error(`PIPELINE_TEST_TIME_SCALE=${raw}: must be a number of at least 1`);
  return value;
}

/** The factor set for this run (at least 1). */
export const TIME_SCALE = readScale();

/** The factor now: the run's own, or the machine's load per core if that is higher (at most 10). */
export function timeScale(): number {
  const loadPerCore = loadavg()[0] / Math.max(1, availableParallelism());
  return Math.max(TIME_SCALE, Math.min(MAX_SCALE, loadPerCore));
}

/** `ms` stretched by the machine's time scale as it is now. */
export function scaled(ms: number): number {
  return Math.round(ms * timeScale());
}
