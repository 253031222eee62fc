/**
 * The benchmark harness still runs every figure, at the smallest sizes that exercise its
 * code (two executions, one round, one RSS sample): a smoke test proves the harness, the
 * benchmark itself (`npm run bench`) measures. No timing is asserted; the counts it reads
 * from real histories and the query counter are design properties the benchmarks report,
 * so they are checked: one activity per step, no events per retry, one or two Postgres
 * round trips per step. The bytes of history per step and per execution and what a step
 * commit does in Postgres (writes, trigger calls, buffers) are counts too: each is held
 * under the bound recorded in bench/bounds.json, and so are the Postgres statements and Temporal
 * calls of one re-drive admission, so the next change that makes an
 * execution cost more fails here instead of in a benchmark nobody ran.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import { renderTable } from '../../bench/report';
import { runBenchmarks } from '../../bench/suite';
import { scaled } from '../helpers/time-scale';

const bounds = JSON.parse(readFileSync(new URL('../../bench/bounds.json', import.meta.url), 'utf8'));

describe('benchmark harness (smoke)', () => {
  it('measures every figure at the smallest sizes', { timeout: scaled(600_000) }, async () => {
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
    const { engineOverhead, fastPath, historyEvents, historyBytes, stepCommit, postgresRoundTrips, workerMemory, dlqPublish } = results.figures;
    expect(engineOverhead.engine.median).toBeGreaterThan(0);
    expect(engineOverhead.bare.median).toBeGreaterThan(0);
    // The floor (1c) ran in the same rounds, and each of its executions committed one row per step.
    expect(engineOverhead.floor.rate.median).toBeGreaterThan(0);
    expect(engineOverhead.floor.succeeded).toBe(engineOverhead.floor.executions);
    expect(engineOverhead.floor.commitsPerExecution).toBe(5);
    expect(historyEvents.bare.perStep).toBe(6);
    // Figure 1f: a fast-path step is one marker, as a bare local activity is (all steps in one workflow task).
    expect(fastPath.historyPerStep.engineFast.perStep).toBe(1);
    expect(fastPath.historyPerStep.bareLocal.perStep).toBe(1);
    expect(fastPath.historyPerStep.engine.perStep).toBe(6);
    expect(fastPath.threeStepLatencyMs.fastPath.n).toBe(2);
    expect(historyEvents.engine.perStep).toBeLessThanOrEqual(historyEvents.bare.perStep);
    expect(historyEvents.engine.perRetriedAttempt).toBeLessThanOrEqual(2);
    expect(postgresRoundTrips.perSuccessfulStep.max).toBeLessThanOrEqual(2);
    expect(postgresRoundTrips.perCommandStep.max).toBeLessThanOrEqual(3);
    expect(postgresRoundTrips.perSuccessfulStep.max).toBeLessThanOrEqual(bounds.postgresRoundTrips.perSuccessfulStep);
    expect(postgresRoundTrips.perCommandStep.max).toBeLessThanOrEqual(bounds.postgresRoundTrips.perCommandStep);
    expect(postgresRoundTrips.perFiveStepExecution.max).toBeLessThanOrEqual(bounds.postgresRoundTrips.perFiveStepExecution);
    // Bytes and statement work per execution: counts under recorded bounds, never a time.
    expect(historyBytes.engine.fiveSteps).toBeLessThanOrEqual(bounds.historyBytes.engineFiveStepExecution);
    expect(historyBytes.engine.perStep).toBeLessThanOrEqual(bounds.historyBytes.enginePerStep);
    expect(historyBytes.bare.perStep).toBeGreaterThan(0);
    for (const commit of [stepCommit.middleStep, stepCommit.lastStep]) expect(commit.writes).toBeLessThanOrEqual(bounds.stepCommit.writes);
    expect(stepCommit.middleStep.triggerCalls).toBeLessThanOrEqual(bounds.stepCommit.middleStepTriggerCalls);
    expect(stepCommit.lastStep.triggerCalls).toBeLessThanOrEqual(bounds.stepCommit.lastStepTriggerCalls);
    expect(stepCommit.middleStep.sharedBuffers).toBeLessThanOrEqual(bounds.stepCommit.middleStepSharedBuffers);
    expect(stepCommit.lastStep.sharedBuffers).toBeLessThanOrEqual(bounds.stepCommit.lastStepSharedBuffers);
    expect(workerMemory.idle.median).toBeGreaterThan(0);
    // The bare variant parked and ran its runs too (its waits would have thrown otherwise).
    expect(workerMemory.bare.idle.median).toBeGreaterThan(0);
    expect(workerMemory.bare.parkedPlusRunning.median).toBeGreaterThan(0);
    expect(workerMemory.boundedCache.maxCachedWorkflows).toBe(2);
    expect(workerMemory.boundedCache.engine.parkedPlusRunning.median).toBeGreaterThan(0);
    expect(workerMemory.boundedCache.bare.parkedPlusRunning.median).toBeGreaterThan(0);
    expect(dlqPublish.postgres.rate.median).toBeGreaterThan(0);
    expect(results.figures.redriveThroughput).toMatchObject({ measured: true, count: 2 });
    expect(results.figures.redriveThroughput.ratio.median).toBeGreaterThan(0);
    // The re-drive's floor (4c) admitted its rows too (a refused write answers 409 and fails the figure).
    expect(results.figures.redriveThroughput.floor.ratio.median).toBeGreaterThan(0);
    // 4d: the same admissions with their runs held until each window ended, then run to their end by a drain worker.
    expect(results.figures.redriveAlone).toMatchObject({ measured: true, held: true, count: 2 });
    expect(results.figures.redriveAlone.floor.ratio.median).toBeGreaterThan(0);
    // One admission's work, counted: the record read and the admission statement, then the one start.
    const admission = results.figures.redriveThroughput.perAdmission;
    expect(admission.postgresStatements).toBeGreaterThan(0);
    expect(admission.postgresStatements).toBeLessThanOrEqual(bounds.redriveAdmission.postgresStatements);
    expect(admission.temporalCalls).toEqual({ StartWorkflowExecution: bounds.redriveAdmission.temporalCalls });
    expect(admission.bareTemporalCalls).toEqual({ StartWorkflowExecution: 1 });
    expect(renderTable(results)).toContain('| 1 | Executions/s');
  });
});
