/**
 * The fleet figures' harnesses (`npm run bench -- --only jobrate,fleet,retention`) at tiny
 * sizes, on the suite's Temporal and real Postgres: each runs its whole path (executions
 * failed through the engine, bulk jobs created and watched over HTTP, a backlog seeded and
 * drained by the real retention loop, ordinary submissions beside it) and renders its table.
 * Only counts are asserted, never a time: every item admitted exactly once, every backlog
 * record deleted with its attempt log and nothing else.
 */
import { Client, Connection } from '@temporalio/client';
import { describe, expect, inject, it } from 'vitest';
import { failExecutions, startBenchService } from '../../bench/bench-service';
import { measureFleet, renderFleet, type FleetOptions } from '../../bench/fleet';
import { measureJobRate, renderJobRate } from '../../bench/job-rate';
import { measureRetentionDrain, renderRetentionDrain } from '../../bench/retention-drain';
import { workflowIdFor } from '../../src/ids';
import { createLog } from '../../src/log';
import { scaled } from '../helpers/time-scale';

const log = createLog({ level: 'silent' });
const say = () => undefined;
const meta = { date: 'today', load: '0', loadEnd: '0' };
/** The fleet figure at smoke sizes: one run, job A asked 50/s, submissions at 10/s, on the suite's Temporal. */
const smokeFleet = (shape: Pick<FleetOptions, 'items' | 'secondItems' | 'holdMs' | 'roles' | 'yieldToLive'>) =>
  measureFleet({ ...shape, ratePerSecond: 50, submitPerSecond: 10, runs: 1, bulkNice: 0, log, say, temporalAddress: inject('temporalAddress') });

describe('fleet figures harness (smoke)', () => {
  it('jobrate: re-drives every item once at each asked rate and counts the busiest second', async () => {
    const result = await measureJobRate({ items: 4, rates: [5, 50], runs: 1, log, say, temporalAddress: inject('temporalAddress') });
    expect(result.rates.map((r) => r.asked)).toEqual([5, 50]);
    for (const figure of result.rates) {
      expect(figure.perRun).toHaveLength(1);
      expect(figure.perRun[0].admitted).toBe(4);
      // Some second held at least one admission, and no window can hold more than the job's items.
      expect(figure.perRun[0].busiestSecond).toBeGreaterThanOrEqual(1);
      expect(figure.perRun[0].busiestSecond).toBeLessThanOrEqual(4);
      expect(figure.perRun[0].achieved).toBeGreaterThan(0);
    }
    const table = renderJobRate(result, meta);
    expect(table.match(/\| Busiest 1-second window of admissions \|/g)).toHaveLength(2);
    expect(table).toContain('load average (1 / 5 / 15 min) 0 at the start and 0 at the end');
  });

  it('jobrate, runs held: admits every item with none of its runs started, then drains them to SUCCEEDED', async () => {
    // measureJobRate throws if a run left QUEUED before the last admission, or if a drained run did not succeed.
    const result = await measureJobRate({ items: 4, rates: [50], runs: 1, held: true, log, say, temporalAddress: inject('temporalAddress') });
    expect(result.held).toBe(true);
    expect(result.rates[0].perRun.map((run) => run.admitted)).toEqual([4]);
    expect(renderJobRate(result, meta)).toContain('admissions only (the runs held)');
  });

  it('fleet, split roles: submissions idle and under a job, and a second job admitted behind the first one, the runs in a worker process of their own', async () => {
    const result = await smokeFleet({ items: 10, secondItems: 3, holdMs: 1000, roles: 'split', yieldToLive: true });
    const [run] = result.perRun;
    expect(run.jobA.admitted).toBe(10);
    expect(run.jobB.admitted).toBe(3);
    // As many idle submissions as job A's admissions last at its rate (at least 5), every one answered 202.
    expect(run.idle.n).toBe(5);
    expect(run.underJob.n).toBeGreaterThanOrEqual(1);
    // Each submission's execution counted to SUCCEEDED (completion() refuses one that did not).
    expect(run.idleDone.n).toBe(5);
    expect(run.underJobDone.n).toBe(run.underJob.n);
    expect(run.previousRunsOpen.atCreation).toBeLessThanOrEqual(10);
    expect(run.firstAdmissionMs).toBeGreaterThanOrEqual(0);
    const table = renderFleet(result, meta);
    expect(table).toContain('Job A yields to live traffic (`pipeline.redrive-job.yield-to-live` true)');
    expect(table).toContain('| Ordinary submission p99, ms |');
    expect(table).toContain('| Their executions, admission → SUCCEEDED p99, ms |');
    expect(table).toContain("| Job B's first admission after its creation, ms");
    expect(table).toContain('Split roles: the API in one process');
  });

  it('fleet, runs held: job A admits every item with none of its runs started, then a bulk worker runs them all', async () => {
    // measureFleet throws if one of A's runs left QUEUED while held, and completion() if a submission's execution did not succeed.
    const result = await smokeFleet({ items: 6, secondItems: 2, holdMs: 0, roles: 'held', yieldToLive: false });
    const [run] = result.perRun;
    expect(run.jobA.admitted).toBe(6);
    expect(run.jobB.admitted).toBe(2);
    // Held: every one of A's runs was still open when B was created and at B's first admission.
    expect(run.previousRunsOpen).toEqual({ atCreation: 6, atFirstAdmission: 6 });
    expect(renderFleet(result, meta)).toContain("The job's runs on capacity of their own");
  });

  it("a run an earlier bench service left open in Temporal does not hold a later one's start of the same execution id", async () => {
    // CI s62a: the split-roles test's service stopped with one run's last workflow task in flight; that
    // run stayed open under its workflow id, and the next test's start of the same id waited forever.
    const address = inject('temporalAddress');
    const earlier = await startBenchService({ log, temporalAddress: address });
    await earlier.stop();
    const connection = await Connection.connect({ address });
    try {
      // The earlier service's run of `left-open`, open for good: its task queue has no worker.
      const workflowId = workflowIdFor(earlier.tenant, 'left-open');
      const client = new Client({ connection });
      await client.workflow.start('pipelineWorkflow', { workflowId, taskQueue: `nobody-polls-${earlier.tenant}`, args: [] });
      const later = await startBenchService({ log, temporalAddress: address });
      try {
        expect(later.tenant).not.toBe(earlier.tenant);
        // Starts, runs and fails it through the engine; a start held by the open run fails the wait at its cap.
        await failExecutions(later, ['left-open'], { capMs: scaled(60_000) });
      } finally {
        await later.stop();
        await client.workflow.getHandle(workflowId).terminate('the test is over');
      }
    } finally {
      await connection.close();
    }
  });

  it('retention: drains exactly the seeded backlog, with its attempt log, and nothing of the live store', async () => {
    const result = await measureRetentionDrain({
      records: 3000,
      live: 400,
      intervalMs: 1000,
      dutyCycle: 0.5,
      batchSize: 500,
      submitPerSecond: 5,
      idleSubmissions: 5,
      capMs: 600_000,
      log,
      say,
      temporalAddress: inject('temporalAddress'),
    });
    expect(result.backlogRecords).toBe(3000);
    expect(result.drained).toBe(true);
    expect(result.deleted.execution_record).toBe(3000);
    expect(result.deleted.execution_attempt).toBe(3000 * 5);
    expect(result.liveRecordsAfter).toBe(result.liveRecordsBefore);
    expect(result.idle.n).toBe(5);
    expect(result.passes).toBeGreaterThanOrEqual(1);
    const table = renderRetentionDrain(result, meta);
    expect(table).toContain('| Drain of 3k records');
    expect(table).toContain('| Ordinary submission p99, ms |');
  });
});
