/**
 * The benchmark harness still runs (N = 5, one round). No timing is asserted; the
 * counts it reads from real histories and the query counter are design properties the
 * benchmarks report, so they are checked: one activity per step, no events per retry,
 * one or two Postgres round trips per step.
 */
import { describe, expect, inject, it } from 'vitest';
import { renderTable } from '../../bench/report';
import { runBenchmarks } from '../../bench/suite';

describe('benchmark harness (smoke)', () => {
  it('measures every figure at N = 5', async () => {
    const results = await runBenchmarks({ n: 5, runs: 1, concurrency: 5, memoryCount: 5, dlqCount: 5, redriveCount: 5, temporalAddress: inject('temporalAddress') });
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
    expect(results.figures.redriveThroughput).toMatchObject({ measured: true, count: 5 });
    expect(results.figures.redriveThroughput.ratio.median).toBeGreaterThan(0);
    expect(renderTable(results)).toContain('| 1 | Executions/s');
  }, 180_000);
});
