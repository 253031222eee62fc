/**
 * The benchmark harness still runs every figure, at the smallest sizes that exercise its
 * code (two executions, one round, one RSS sample): a smoke test proves the harness, the
 * benchmark itself (`npm run bench`) measures. No timing is asserted; the counts it reads
 * from real histories and the query counter are design properties the benchmarks report,
 * so they are checked: one activity per step, no events per retry, one or two Postgres
 * round trips per step.
 */
import { describe, expect, inject, it } from 'vitest';
import { renderTable } from '../../bench/report';
import { runBenchmarks } from '../../bench/suite';

describe('benchmark harness (smoke)', () => {
  it('measures every figure at the smallest sizes', async () => {
    const results = await runBenchmarks({
      n: 2,
      runs: 1,
      concurrency: 2,
      memoryCount: 2,
      dlqCount: 2,
      redriveCount: 2,
      roundTripExecutions: 1,
      memorySamples: 1,
      temporalAddress: inject('temporalAddress'),
    });
    const { engineOverhead, historyEvents, postgresRoundTrips, workerMemory, dlqPublish } = results.figures;
    expect(engineOverhead.engine.median).toBeGreaterThan(0);
    expect(engineOverhead.bare.median).toBeGreaterThan(0);
    expect(historyEvents.bare.perStep).toBe(6);
    expect(historyEvents.engine.perStep).toBeLessThanOrEqual(historyEvents.bare.perStep);
    expect(historyEvents.engine.perRetriedAttempt).toBeLessThanOrEqual(2);
    expect(postgresRoundTrips.perSuccessfulStep.max).toBeLessThanOrEqual(2);
    expect(postgresRoundTrips.perCommandStep.max).toBeLessThanOrEqual(3);
    expect(workerMemory.idle.median).toBeGreaterThan(0);
    expect(dlqPublish.postgres.rate.median).toBeGreaterThan(0);
    expect(results.figures.redriveThroughput).toMatchObject({ measured: true, count: 2 });
    expect(results.figures.redriveThroughput.ratio.median).toBeGreaterThan(0);
    expect(renderTable(results)).toContain('| 1 | Executions/s');
  }, 180_000);
});
