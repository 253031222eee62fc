/**
 * `npm run bench -- --only fleet`: does a bulk re-drive job leave live traffic alone? One
 * service (API over real HTTP, worker, the jobs' own task queue and pool) on a fresh dev
 * server and database; per run:
 *
 *   1. ordinary submissions (`POST …/executions` of a one-step pipeline) at a steady rate with
 *      nothing else running: the idle latency;
 *   2. the same submissions while job A re-drives N FAILED executions at 50/s (room for all
 *      of them in flight; each re-driven run's step takes `holdMs`, so most are still queued
 *      or running when A admits its last item): the latency under a job, side by side;
 *   3. at A's last admission, job B over a few more FAILED executions: how long from B's
 *      creation to its first admission, while A's runs are still queued or running (counted
 *      then, so the figure says it measured what it claims).
 *
 * Targets: submission p50 and p99 under the job within 2× of idle; B's first
 * admission ≤ 1 s.
 */
import { cpus } from 'node:os';
import type { Log } from '../src/log';
import {
  admissionTimes,
  createJob,
  failExecutions,
  latencySummary,
  startBenchService,
  submitSteadily,
  waitForJob,
  waitForRunsToEnd,
  openRuns,
  type BenchService,
} from './bench-service';
import { spread, type Spread } from './stats';
import { waitFor } from './wait';

export interface FleetOptions {
  /** items of job A (default 1,000) */
  items: number;
  /** items of job B (default 50) */
  secondItems: number;
  /** job A's asked rate (default 50/s) */
  ratePerSecond: number;
  /** ordinary submissions per second, idle and under the job (default 10) */
  submitPerSecond: number;
  /** how long a re-driven run's step takes (default 5 s) */
  holdMs: number;
  runs: number;
  /**
   * 'one': the whole service in one process; 'split': an API process and a worker process
   * (bench-service.ts); 'bulk': the live service in one process (`pipeline.orchestrator.worker.runs`
   * live) and the jobs' runs on a task queue of their own, run by a worker process of their own
   * (`…worker.runs` bulk) started under `nice -n bulkNice`; 'held': the same queue, but no worker
   * runs the jobs' runs until job B's first admission has been read (then a bulk worker process
   * runs them to SUCCEEDED, not measured): the live service beside a 50/s job whose runs execute
   * on capacity of their own, which a single machine can only stand in for by holding them
   */
  roles: FleetRoles;
  /** with roles 'bulk': the bulk worker's nice value (19: the kernel runs it after everything else when the cores are busy; 0: as the rest) */
  bulkNice: number;
  /** pipeline.redrive-job.yield-to-live for the service (false by default, as shipped: job A admits at its asked rate whatever the load) */
  yieldToLive: boolean;
  log: Log;
  say: (line: string) => void;
  temporalAddress?: string;
}

export type FleetRoles = 'one' | 'split' | 'bulk' | 'held';

export interface FleetRun {
  idle: { n: number; p50: number; p99: number };
  underJob: { n: number; p50: number; p99: number };
  /** the same submissions' executions, from admission to SUCCEEDED on the store's clock (their step waits in the task queue with the job's) */
  idleDone: { n: number; p50: number; p99: number };
  underJobDone: { n: number; p50: number; p99: number };
  /** job A's achieved rate and admitted items */
  jobA: { admitted: number; achieved: number | null };
  /** ms from job B's creation to its first admission */
  firstAdmissionMs: number;
  /** A's re-driven runs still QUEUED or RUNNING when B was created, and at B's first admission */
  previousRunsOpen: { atCreation: number; atFirstAdmission: number };
  jobB: { admitted: number };
}

export interface FleetResult {
  items: number;
  secondItems: number;
  ratePerSecond: number;
  submitPerSecond: number;
  holdMs: number;
  roles: FleetRoles;
  bulkNice: number;
  yieldToLive: boolean;
  /** under ÷ idle, per run */
  p50Ratio: Spread;
  p99Ratio: Spread;
  /** the executions' admission → SUCCEEDED, under ÷ idle */
  doneP50Ratio: Spread;
  doneP99Ratio: Spread;
  firstAdmissionMs: Spread;
  perRun: FleetRun[];
}

/**
 * ms from admission to SUCCEEDED (record created_at → updated_at) of the executions `prefix-*`,
 * read once each of them has ended; refuses if one ended otherwise. The last submissions made
 * while a job ran may still be running when the job's own runs have ended (a loaded machine, a
 * start answered `pending` and made by the sweeper): their figure waits for them.
 */
async function completion(bench: BenchService, prefix: string, say: (line: string) => void) {
  const pattern = `${prefix}-%`;
  await waitForRunsToEnd(bench, `the ${prefix}-* submissions`, pattern, { say });
  const rows = await bench.service.db.query<{ status: string; ms: number }>(
    `SELECT status, (extract(epoch FROM updated_at - created_at) * 1000)::float8 AS ms FROM execution_record WHERE tenant_id = $1 AND execution_id LIKE $2`,
    [bench.tenant, pattern],
  );
  const notDone = rows.rows.filter((row) => row.status !== 'SUCCEEDED').length;
  if (notDone > 0) throw new Error(`${notDone} of the ${prefix}-* executions ended without succeeding`);
  return latencySummary(rows.rows.map((row) => ({ at: 0, ms: Number(row.ms) })));
}

export async function measureFleet(options: FleetOptions): Promise<FleetResult> {
  const bench = await startBenchService({
    log: options.log,
    temporalAddress: options.temporalAddress,
    holdMs: options.holdMs,
    roles: options.roles === 'split' ? 'split' : 'one',
    jobRuns: options.roles === 'bulk' || options.roles === 'held' ? 'held' : 'shared',
    settings: { 'pipeline.redrive-job.yield-to-live': options.yieldToLive },
  });
  const perRun: FleetRun[] = [];
  let stopBulk: (() => Promise<void>) | undefined;
  try {
    if (options.roles === 'bulk') stopBulk = await bench.runBulk(options.bulkNice);
    // Untimed: the first submissions warm the HTTP server, the pool and the Temporal client.
    for (let i = 0; i < 10; i++) await bench.submit(`warm-${i}`);
    for (let run = 0; run < options.runs; run++) {
      const label = `fleet run ${run + 1}/${options.runs}`;
      const a = Array.from({ length: options.items }, (_, i) => `fa${run}-${i}`);
      const b = Array.from({ length: options.secondItems }, (_, i) => `fb${run}-${i}`);
      options.say(`${label}: failing ${a.length + b.length} executions`);
      await failExecutions(bench, [...a, ...b], { say: options.say });
      // As many idle submissions as the job's admissions will last.
      const count = Math.max(5, Math.ceil((options.items / options.ratePerSecond) * options.submitPerSecond));
      options.say(`${label}: ${count} ordinary submissions, nothing else running`);
      const idle = await submitSteadily(bench, `idle${run}`, options.submitPerSecond, () => false, count);
      options.say(`${label}: job A re-drives ${a.length} at ${options.ratePerSecond}/s, ordinary submissions beside it`);
      const jobA = await createJob(bench, a, options.ratePerSecond, a.length);
      let admittedAll = false;
      const underJobDone = submitSteadily(bench, `busy${run}`, options.submitPerSecond, () => admittedAll);
      const viewA = await waitForJob(bench, jobA.jobId, (view) => view.counts.remaining === 0, { everyMs: 100, say: options.say }).finally(() => {
        admittedAll = true;
      });
      const underJob = await underJobDone;
      const atCreation = await openRuns(bench, a);
      const jobB = await createJob(bench, b, options.ratePerSecond, 50);
      const createdB = Date.parse(jobB.createdAt);
      const firstB = (
        await waitFor(
          `${label}: job B's first admission`,
          () => admissionTimes(bench, jobB.jobId),
          (times) => times.length > 0,
          () => 'none yet',
          {
            everyMs: 50,
            capMs: 300_000,
            say: options.say,
          },
        )
      )[0];
      const atFirstAdmission = await openRuns(bench, a);
      if (options.roles === 'held') {
        // Held means held: had any of A's runs left QUEUED, something ran them on these cores.
        const moved = await bench.service.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM execution_record WHERE tenant_id = $1 AND execution_id = ANY($2) AND status <> 'QUEUED'`,
          [bench.tenant, a],
        );
        if (moved.rows[0].n > 0) throw new Error(`${label}: ${moved.rows[0].n} of A's re-driven runs left QUEUED while they were held`);
        options.say(`${label}: running the held runs on a bulk worker (not measured)`);
        stopBulk = await bench.runBulk();
      }
      options.say(`${label}: waiting for both jobs' runs to end`);
      const doneA = await waitForJob(bench, jobA.jobId, () => false, { everyMs: 1000, say: options.say });
      const doneB = await waitForJob(bench, jobB.jobId, () => false, { everyMs: 1000, say: options.say });
      // A job may finish at its last admission: the next run's idle figure waits for every re-driven run to end.
      await waitForRunsToEnd(bench, "both jobs' re-driven runs", [...a, ...b], { everyMs: 1000, say: options.say });
      if (options.roles === 'held') {
        await stopBulk?.();
        stopBulk = undefined;
      }
      const result: FleetRun = {
        idle: latencySummary(idle),
        underJob: latencySummary(underJob),
        idleDone: await completion(bench, `idle${run}`, options.say),
        underJobDone: await completion(bench, `busy${run}`, options.say),
        jobA: { admitted: doneA.counts.admitted, achieved: viewA.rate.achieved },
        firstAdmissionMs: Math.round(firstB - createdB),
        previousRunsOpen: { atCreation, atFirstAdmission },
        jobB: { admitted: doneB.counts.admitted },
      };
      perRun.push(result);
      options.say(
        `${label}: submissions idle p50/p99 ${result.idle.p50}/${result.idle.p99} ms, under job A ${result.underJob.p50}/${result.underJob.p99} ms; ` +
          `their executions to SUCCEEDED idle ${result.idleDone.p50}/${result.idleDone.p99} ms, under job A ${result.underJobDone.p50}/${result.underJobDone.p99} ms; ` +
          `job B's first admission ${result.firstAdmissionMs} ms after its creation, with ${atCreation} / ${atFirstAdmission} of A's runs open`,
      );
    }
  } finally {
    await stopBulk?.();
    await bench.stop();
  }
  return {
    items: options.items,
    secondItems: options.secondItems,
    ratePerSecond: options.ratePerSecond,
    submitPerSecond: options.submitPerSecond,
    holdMs: options.holdMs,
    roles: options.roles,
    bulkNice: options.bulkNice,
    yieldToLive: options.yieldToLive,
    p50Ratio: spread(perRun.map((r) => r.underJob.p50 / r.idle.p50)),
    p99Ratio: spread(perRun.map((r) => r.underJob.p99 / r.idle.p99)),
    doneP50Ratio: spread(perRun.map((r) => r.underJobDone.p50 / r.idleDone.p50)),
    doneP99Ratio: spread(perRun.map((r) => r.underJobDone.p99 / r.idleDone.p99)),
    firstAdmissionMs: spread(perRun.map((r) => r.firstAdmissionMs)),
    perRun,
  };
}

const ROLES_TEXT: Record<FleetRoles, (nice: number) => string> = {
  one: () => "One process: the API, the worker and the jobs' ticks (`pipeline.role` all).",
  split: () =>
    "Split roles: the API in one process (`pipeline.role` api), the worker in another (`pipeline.role` worker: every run and the jobs' ticks), one dev server and one Postgres, all on the same cores.",
  held: () =>
    "The job's runs on capacity of their own: the live service in one process (`pipeline.role` all, `pipeline.orchestrator.worker.runs` live: the API, the live runs, the jobs' ticks), the jobs' re-driven runs on a task queue of their own (`pipeline.redrive-job.run-task-queue`) that nothing here runs while the figure is measured (a machine with two cores cannot stand in for a second one otherwise): a bulk worker process runs them to SUCCEEDED after job B's first admission, checked QUEUED until then; one dev server and one Postgres, on the same cores as the live service.",
  bulk: (nice) =>
    `Bulk runs on a worker of their own: the live service in one process (\`pipeline.role\` all, \`pipeline.orchestrator.worker.runs\` live: the API, the live runs, the jobs' ticks), the jobs' re-driven runs on a task queue of their own (\`pipeline.redrive-job.run-task-queue\`) run by a worker process that runs nothing else (\`…worker.runs\` bulk, the jobs' ticks too)${nice === 0 ? '' : ` started under \`nice -n ${nice}\``}; one dev server and one Postgres, all on the same cores.`,
};

export function renderFleet(result: FleetResult, meta: { date: string; load: string; loadEnd: string }): string {
  const f = (s: Spread) => `${s.median} (${s.min}–${s.max})`;
  const med = (xs: number[]) => spread(xs, 1);
  const runs = result.perRun;
  const idle50 = med(runs.map((r) => r.idle.p50));
  const idle99 = med(runs.map((r) => r.idle.p99));
  const busy50 = med(runs.map((r) => r.underJob.p50));
  const busy99 = med(runs.map((r) => r.underJob.p99));
  const open = med(runs.map((r) => r.previousRunsOpen.atFirstAdmission));
  const idleDone50 = med(runs.map((r) => r.idleDone.p50));
  const idleDone99 = med(runs.map((r) => r.idleDone.p99));
  const busyDone50 = med(runs.map((r) => r.underJobDone.p50));
  const busyDone99 = med(runs.map((r) => r.underJobDone.p99));
  const within = (s: Spread) => (s.max <= 2 ? 'met' : '**not met**');
  return [
    `Measured ${meta.date} on ${cpus().length} cores, Node ${process.version}; load average (1 / 5 / 15 min) ${meta.load} at the start and ${meta.loadEnd} at the end; ${runs.length} runs, median (min–max) over runs.`,
    ROLES_TEXT[result.roles](result.bulkNice),
    `Ordinary submissions: \`POST …/executions\` of a one-step pipeline over loopback HTTP, ${result.submitPerSecond}/s open loop (${runs.map((r) => `${r.idle.n} idle / ${r.underJob.n} under the job`).join(', ')}). Job A: ${result.items} FAILED executions at ${result.ratePerSecond}/s, each re-driven run's step taking ${result.holdMs / 1000} s; job B: ${result.secondItems} more, created at A's last admission.`,
    result.yieldToLive === false
      ? `Job A does not yield (\`pipeline.redrive-job.yield-to-live\` false, the default): it admits at its asked rate whatever the load; it achieved ${runs.map((r) => `${r.jobA.achieved ?? '–'}/s`).join(', ')}.`
      : `Job A yields to live traffic (\`pipeline.redrive-job.yield-to-live\` true): it steers its own rate under the asked ${result.ratePerSecond}/s by its admissions' times; it achieved ${runs.map((r) => `${r.jobA.achieved ?? '–'}/s`).join(', ')}.`,
    '',
    '| Figure | Idle | Under job A | Under ÷ idle | Target |',
    '|---|---|---|---|---|',
    `| Ordinary submission p50, ms | ${f(idle50)} | ${f(busy50)} | **${f(result.p50Ratio)}** | ≤ 2: ${within(result.p50Ratio)} |`,
    `| Ordinary submission p99, ms | ${f(idle99)} | ${f(busy99)} | **${f(result.p99Ratio)}** | ≤ 2: ${within(result.p99Ratio)} |`,
    `| Their executions, admission → SUCCEEDED p50, ms | ${f(idleDone50)} | ${f(busyDone50)} | **${f(result.doneP50Ratio)}** | (no target) |`,
    `| Their executions, admission → SUCCEEDED p99, ms | ${f(idleDone99)} | ${f(busyDone99)} | **${f(result.doneP99Ratio)}** | (no target) |`,
    `| Job B's first admission after its creation, ms (A's re-driven runs still queued or running then: ${f(open)}) | | **${f(result.firstAdmissionMs)}** | | ≤ 1000: ${result.firstAdmissionMs.max <= 1000 ? 'met' : '**not met**'} |`,
  ].join('\n');
}
