/**
 * `npm run bench -- --only jobrate`: does a bulk re-drive job keep the rate it was asked
 * for, as a ceiling? For each asked rate R (default 10, 50 and 100/s), per run, N executions
 * of a one-step pipeline fail (really, through the engine), a job re-drives them all at R/s
 * with room for every run in flight, and the figure is the achieved rate (items processed
 * between the first and the last, per second, as the job's view reports it) against R, and
 * the busiest 1-second window of admissions (from each item's admission time in the store)
 * against R + 1. The whole service composition runs in this process (API over HTTP, worker,
 * dispatcher, the job's workflow and activities on their own task queue) on a fresh dev
 * server and a fresh database.
 */
import { cpus, loadavg } from 'node:os';
import type { Log } from '../src/log';
import { admissionTimes, busiestSecond, createJob, failExecutions, jobView, startBenchService, waitForJob } from './bench-service';
import { waitFor } from './wait';
import { cpuDelta, cpuSnapshot, type CpuSample } from './cpu';
import { spread, type Spread } from './stats';

export interface JobRateOptions {
  items: number;
  /** asked rates, items/s */
  rates: number[];
  runs: number;
  /**
   * The re-driven runs held on a task queue of their own that nothing runs until the job has
   * admitted every item (then a worker process that runs bulk runs only drains them): the job's
   * own path (its ticks, the admission statement, the Temporal start) measured without the runs'
   * execution on the same cores.
   */
  held?: boolean;
  log: Log;
  say: (line: string) => void;
  temporalAddress?: string;
}

export interface JobRateFigure {
  asked: number;
  achieved: Spread;
  ratio: Spread;
  /** the most admissions in any 1 s window, per run */
  busiestSecond: Spread;
  /** seconds from the job's creation to its last admission */
  wallSeconds: Spread;
  /**
   * Where the machine's time went while the job ran (its creation to its end, the re-driven
   * runs included): CPU ms per admitted item by process, and the share of all cores busy.
   */
  cpuPerItem: { node: Spread; temporal: Spread; postgres: Spread; total: Spread };
  coresBusy: Spread;
  perRun: { achieved: number; wallSeconds: number; admitted: number; busiestSecond: number; cpuPerItem: CpuSample; coresBusy: number }[];
}

export interface JobRateResult {
  items: number;
  held: boolean;
  rates: JobRateFigure[];
}

export async function measureJobRate(options: JobRateOptions): Promise<JobRateResult> {
  // The ceiling itself: a job that does not yield to its own runs' load (the fleet figure measures yielding).
  const bench = await startBenchService({
    log: options.log,
    temporalAddress: options.temporalAddress,
    settings: { 'pipeline.redrive-job.yield-to-live': false },
    jobRuns: options.held ? 'held' : 'shared',
  });
  const rates: JobRateFigure[] = [];
  try {
    for (const [r, rate] of options.rates.entries()) {
      const perRun: JobRateFigure['perRun'] = [];
      for (let run = 0; run < options.runs; run++) {
        const label = `job rate ${rate}/s, run ${run + 1}/${options.runs}`;
        const ids = Array.from({ length: options.items }, (_, i) => `jr${r}-${run}-${i}`);
        options.say(`${label}: failing ${options.items} executions`);
        await failExecutions(bench, ids, { say: options.say });
        options.say(`${label}: re-driving them`);
        const cpuBefore = cpuSnapshot(bench.temporalPid, bench.databaseName);
        const startedAt = performance.now();
        const created = await createJob(bench, ids, rate, Math.max(options.items, 1));
        // Held: the window ends at the last admission (every item processed); the runs are drained after it.
        const view = await waitForJob(bench, created.jobId, options.held ? (v) => v.counts.remaining === 0 : () => false, {
          everyMs: options.held ? 100 : 500,
          say: options.say,
        });
        const items = Math.max(view.counts.admitted, 1);
        const cpu = cpuDelta(cpuBefore, cpuSnapshot(bench.temporalPid, bench.databaseName), items);
        const coresBusy = Number((((cpu.node + cpu.temporal + cpu.postgres) * items) / ((performance.now() - startedAt) * cpus().length)).toFixed(2));
        const times = await admissionTimes(bench, created.jobId);
        const createdAt = Date.parse(view.createdAt);
        const wallSeconds = times.length > 0 ? (times.at(-1)! - createdAt) / 1000 : NaN;
        const achieved = view.rate.achieved as number;
        const busiest = busiestSecond(times);
        perRun.push({ achieved, wallSeconds, admitted: view.counts.admitted, busiestSecond: busiest, cpuPerItem: cpu, coresBusy });
        if (options.held) {
          // The figure measured what it claims: at its last admission no re-driven run had started a step.
          const moved = await bench.service.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM execution_record WHERE tenant_id = $1 AND redrive_job_id = $2 AND status <> 'QUEUED'`,
            [bench.tenant, created.jobId],
          );
          if (moved.rows[0].n > 0) throw new Error(`${label}: ${moved.rows[0].n} re-driven runs left QUEUED inside the window: they were not held`);
          options.say(`${label}: every item admitted; running the held runs to their end (not measured)`);
          const stopBulk = await bench.runBulk();
          try {
            // A job ends once every item is processed; its runs end after it, counted in its view.
            await waitForJob(bench, created.jobId, () => false, { everyMs: 500, say: options.say });
            const ended = await waitFor(
              `job ${created.jobId}'s runs to end`,
              () => jobView(bench, created.jobId),
              (v) => v.counts.running === 0,
              (v) => `${v.counts.running} running`,
              { everyMs: 500, say: options.say },
            );
            if (ended.status !== 'COMPLETED' || ended.counts.succeeded !== ended.counts.admitted)
              throw new Error(
                `${label}: the held runs ended with the job ${ended.status} and ${JSON.stringify(ended.counts)}: not every admitted run SUCCEEDED`,
              );
          } finally {
            await stopBulk();
          }
        }
        options.say(
          `${label}: ${view.status}, ${view.counts.admitted} admitted, achieved ${achieved}/s, busiest second ${busiest}, ${wallSeconds.toFixed(1)} s from creation to the last admission; CPU per item node ${cpu.node} · temporal ${cpu.temporal} · postgres ${cpu.postgres} ms, cores ${Math.round(coresBusy * 100)} % busy`,
        );
      }
      rates.push({
        asked: rate,
        achieved: spread(perRun.map((p) => p.achieved)),
        ratio: spread(
          perRun.map((p) => p.achieved / rate),
          3,
        ),
        busiestSecond: spread(perRun.map((p) => p.busiestSecond)),
        wallSeconds: spread(perRun.map((p) => p.wallSeconds)),
        cpuPerItem: {
          node: spread(perRun.map((p) => p.cpuPerItem.node)),
          temporal: spread(perRun.map((p) => p.cpuPerItem.temporal)),
          postgres: spread(perRun.map((p) => p.cpuPerItem.postgres)),
          total: spread(perRun.map((p) => Number((p.cpuPerItem.node + p.cpuPerItem.temporal + p.cpuPerItem.postgres).toFixed(2)))),
        },
        coresBusy: spread(
          perRun.map((p) => p.coresBusy),
          2,
        ),
        perRun,
      });
    }
  } finally {
    await bench.stop();
  }
  return { items: options.items, held: options.held === true, rates };
}

export function renderJobRate(result: JobRateResult, meta: { date: string; load: string; loadEnd: string }): string {
  const f = (s: Spread) => `${s.median} (${s.min}–${s.max})`;
  const runs = result.rates[0]?.perRun.length ?? 0;
  const rows = result.rates.flatMap((figure) => {
    const ratioMet = figure.ratio.min >= 0.95 && figure.ratio.max <= 1.05;
    const ceilingMet = figure.busiestSecond.max <= figure.asked + 1;
    return [
      `| Bulk re-drive job of ${result.items} FAILED executions, items/s (first to last admission) | ${figure.asked} | ${f(figure.achieved)} | **${f(figure.ratio)}** | ≥ 0.95 (and ≤ 1.05): ${ratioMet ? 'met' : '**not met**'} |`,
      `| Busiest 1-second window of admissions | ${figure.asked} | ${f(figure.busiestSecond)} | | ≤ ${figure.asked + 1}: ${ceilingMet ? 'met' : '**not met**'} |`,
      `| Seconds from the job's creation to its last admission | ${((result.items - 1) / figure.asked).toFixed(1)} at the asked rate | ${f(figure.wallSeconds)} | | report |`,
      `| CPU ms per item (node · temporal · postgres = total), ${result.held ? 'admissions only (the runs held)' : 'the re-driven runs included'} | ${figure.asked} | ${figure.cpuPerItem.node.median} · ${figure.cpuPerItem.temporal.median} · ${figure.cpuPerItem.postgres.median} = ${f(figure.cpuPerItem.total)} | | report |`,
      `| Share of the ${cpus().length} cores busy while the job ran | ${figure.asked} | ${f(figure.coresBusy)} | | report |`,
    ];
  });
  return [
    `Measured ${meta.date} on ${cpus().length} cores, Node ${process.version}; load average (1 / 5 / 15 min) ${meta.load} at the start and ${meta.loadEnd} at the end; ${runs} runs per rate, median (min–max).`,
    '',
    '| Figure | Asked | Achieved | Achieved / asked | Target |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export function jobRateLoad(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
}
