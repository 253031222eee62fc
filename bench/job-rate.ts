/**
 * `npm run bench -- --only jobrate`: does a bulk re-drive job keep the rate it was asked
 * for? Per run, N executions of a one-step pipeline fail (really, through the engine), a
 * job re-drives them all at R/s with room for every run in flight, and the figure is the
 * achieved rate (items processed between the first and the last, per second) against R.
 * The whole service composition runs in this process (API, worker, dispatcher, the job's
 * workflow and activities) on a fresh dev server and a fresh database.
 */
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { loadConfig } from '../src/config/config';
import { sha256Hex } from '../src/api/middleware/bearer-auth';
import type { Log } from '../src/log';
import { definePipeline, localStep } from '../src/pipeline/define';
import { startService } from '../src/service/runtime';
import { startDevServer } from '../src/temporal/dev-server';
import { createTestDatabase } from '../test/helpers/postgres';
import { pool, spread, type Spread } from './stats';

export interface JobRateOptions {
  items: number;
  ratePerSecond: number;
  runs: number;
  log: Log;
  say: (line: string) => void;
}

export interface JobRateResult {
  items: number;
  asked: number;
  achieved: Spread;
  ratio: Spread;
  /** seconds from the job's creation to its last admission */
  wallSeconds: Spread;
  perRun: { achieved: number; wallSeconds: number; admitted: number }[];
}

const TOKEN = 'bench-admin-token';
const TENANT = 'bench';

/** Fails its first attempt (non-retryably: one attempt, no retry), succeeds on the re-drive's. */
const onceFailing = definePipeline({
  name: 'once-failing',
  steps: [
    localStep(
      'call',
      (input: unknown, ctx) => {
        if (ctx.attempt === 1) throw Object.assign(new Error('dependency down'), { code: 'DEPENDENCY_DOWN' });
        return input;
      },
      { retry: { limit: 0 } },
    ),
  ],
});

export async function measureJobRate(options: JobRateOptions): Promise<JobRateResult> {
  const devServer = await startDevServer();
  const database = await createTestDatabase();
  const config = loadConfig(
    {},
    {
      'pipeline.store.url': database.url,
      'pipeline.temporal.address': devServer.address,
      'pipeline.temporal.task-queue': `jobrate-${randomBytes(4).toString('hex')}`,
      'pipeline.auth.tokens': [{ sha256: sha256Hex(TOKEN), role: 'admin', name: 'bench' }],
      'pipeline.temporal.call-timeout': '30s',
    },
  );
  const service = await startService({ config, log: options.log, pipelines: [onceFailing], http: false });
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await service.app.request(`/pipeline${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };
  const perRun: JobRateResult['perRun'] = [];
  try {
    for (let run = 0; run < options.runs; run++) {
      const ids = Array.from({ length: options.items }, (_, i) => `r${run}-${i}`);
      options.say(`job rate ${run + 1}/${options.runs}: failing ${options.items} executions`);
      await pool(ids.length, 16, async (i) => {
        await request('POST', `/api/tenants/${TENANT}/executions`, { pipeline: 'once-failing', executionId: ids[i], input: { i } });
      });
      for (;;) {
        const failed = await Promise.all(ids.map((id) => service.store.get(TENANT, id)));
        if (failed.every((record) => record?.status === 'FAILED')) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      options.say(`job rate ${run + 1}/${options.runs}: re-driving them at ${options.ratePerSecond}/s`);
      const created = Date.now();
      const job = await request('POST', `/admin/tenants/${TENANT}/redrive-jobs`, {
        selection: { executionIds: ids },
        reason: 'benchmark',
        allowFailed: true,
        ratePerSecond: options.ratePerSecond,
        batchSize: 1000,
      });
      let view: any;
      for (;;) {
        view = await request('GET', `/admin/tenants/${TENANT}/redrive-jobs/${job.jobId}`);
        if (view.status !== 'RUNNING') break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      const counts = await service.jobs.store.counts(TENANT, job.jobId);
      const wallSeconds = (Date.parse(counts.lastProcessedAt!) - created) / 1000;
      const achieved = view.rate.achieved as number;
      perRun.push({ achieved, wallSeconds, admitted: view.counts.admitted });
      options.say(
        `job rate ${run + 1}/${options.runs}: ${view.status}, ${view.counts.admitted} admitted, achieved ${achieved}/s (asked ${options.ratePerSecond}/s), ${wallSeconds.toFixed(1)} s from creation to the last admission`,
      );
    }
  } finally {
    await service.stop();
    await database.drop();
    await devServer.stop();
  }
  return {
    items: options.items,
    asked: options.ratePerSecond,
    achieved: spread(perRun.map((r) => r.achieved)),
    ratio: spread(
      perRun.map((r) => r.achieved / options.ratePerSecond),
      3,
    ),
    wallSeconds: spread(perRun.map((r) => r.wallSeconds)),
    perRun,
  };
}

export function renderJobRate(result: JobRateResult, date: string, load: string): string {
  const f = (s: Spread) => `${s.median} (${s.min}–${s.max})`;
  return [
    `Measured ${date} on ${cpus().length} cores, Node ${process.version}, load average at start ${load}; ${result.perRun.length} runs, median (min–max).`,
    '',
    '| Figure | Asked | Achieved | Achieved / asked | Target |',
    '|---|---|---|---|---|',
    `| Bulk re-drive job of ${result.items} FAILED executions, items/s (first to last admission) | ${result.asked} | ${f(result.achieved)} | **${f(result.ratio)}** | within 5 % (0.95–1.05) |`,
    `| Seconds from the job's creation to its last admission | ${((result.items - 1) / result.asked).toFixed(1)} at the asked rate | ${f(result.wallSeconds)} | | report |`,
  ].join('\n');
}

export function jobRateLoad(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
}
