/**
 * `npm run bench -- --only retention`: how fast does retention drain a backlog, and what does
 * live traffic see meanwhile? A database is seeded set-based: a live store (`seedStore`, one
 * execution per second ending now, so none of it is past retention) and a backlog of
 * `records` SUCCEEDED executions of a 5-step pipeline, each with its 5 attempt-log rows,
 * created 3 to 7 days ago: past `pipeline.retention.succeeded-executions` shortened to 2 days,
 * as an operator shortening the key (or a worker down for days) leaves it. The whole service
 * runs on it (API over real HTTP, worker); ordinary submissions at a steady rate are timed
 * with no retention running (idle), then while the real `Retention` loop (the service's
 * class, on the service's own pool, at the configured interval, duty cycle and batch size)
 * drains the backlog, until a pass ends with nothing behind. The service's own loop is set to
 * a 1-day interval so it stays out of the way: the measured loop is the only deleter.
 *
 * Figures: drain time (first pass's start to the pass that caught up), records and rows
 * deleted per second of drain, the duty cycle used (time in passes ÷ drain time), and
 * submission p50/p99 idle and during the drain. Target: 1.5M records drained in
 * under 15 minutes with submission p99 unaffected.
 */
import { cpus } from 'node:os';
import { Writable } from 'node:stream';
import { loadConfig } from '../src/config/config';
import { createLog, type Log } from '../src/log';
import { Retention, retentionPolicy } from '../src/service/retention';
import { createTestDatabase, type TestDatabase } from '../test/helpers/postgres';
import { seedStore } from '../test/helpers/seed';
import { latencySummary, startBenchService, submitSteadily } from './bench-service';

export interface RetentionDrainOptions {
  /** SUCCEEDED executions past retention (default 1,500,000) */
  records: number;
  /** executions of the live store, none past retention (default 100,000) */
  live: number;
  /** `pipeline.retention.interval`, `duty-cycle` and `batch-size` of the measured loop (defaults: the service's, 60 s, 0.5, 1000) */
  intervalMs: number;
  dutyCycle: number;
  batchSize: number;
  /** ordinary submissions per second (default 10) and how many of them idle (default 300) */
  submitPerSecond: number;
  idleSubmissions: number;
  /** give up (drained: false) after this long (default 60 min) */
  capMs: number;
  log: Log;
  say: (line: string) => void;
  temporalAddress?: string;
}

interface Pass {
  /** ms since the epoch when the pass ended (its log line) */
  endedAt: number;
  durationMs: number;
  rounds: number;
  deleted: Record<string, number>;
  behind: Record<string, number | null>;
}

export interface RetentionDrainResult {
  records: number;
  live: number;
  attemptsPerRecord: number;
  intervalMs: number;
  dutyCycle: number;
  batchSize: number;
  seedSeconds: number;
  /** records past retention counted before the drain, and the live store's records after it (untouched) */
  backlogRecords: number;
  liveRecordsBefore: number;
  liveRecordsAfter: number;
  drained: boolean;
  drainSeconds: number;
  passes: number;
  deleted: Record<string, number>;
  recordsPerSecond: number;
  rowsPerSecond: number;
  /** time inside passes ÷ drain time */
  dutyCycleUsed: number;
  idle: { n: number; p50: number; p99: number };
  duringDrain: { n: number; p50: number; p99: number };
}

const ATTEMPTS = 5;

/** The backlog: `records` SUCCEEDED 5-step executions of tenant `big`, created 3 to 7 days ago, with their attempt logs. */
async function seedBacklog(database: TestDatabase, records: number, say: (line: string) => void): Promise<void> {
  await database.db.transaction(async (tx) => {
    await tx.query(`SET LOCAL session_replication_role = replica`);
    await tx.query(`SET LOCAL synchronous_commit = off`);
    say(`seeding ${records.toLocaleString('en')} SUCCEEDED executions past retention`);
    await tx.query(
      `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt,
         segment_input, run_id, correlation_id, created_at, updated_at)
       SELECT 'big', s.id, 'demo', 'pipeline/big/' || s.id, 'SUCCEEDED', 7, 5, 5, 1,
         jsonb_build_object('orderId', s.g, 'amount', s.g % 1000, 'currency', 'EUR'), md5(s.id), 'corr-old-' || s.g, s.at, s.at + interval '2 seconds'
       FROM (SELECT g, 'old-' || lpad(g::text, 9, '0') AS id, now() - interval '7 days' + make_interval(secs => 345600.0 * g / $1) AS at
             FROM generate_series(1, $1::int) g) s`,
      [records],
    );
    say(`seeding their ${(records * ATTEMPTS).toLocaleString('en')} attempt-log rows`);
    await tx.query(
      `INSERT INTO execution_attempt (tenant_id, execution_id, step_index, attempt, outcome, run_id, version, committed_at, pipeline_version)
       SELECT 'big', 'old-' || lpad(g::text, 9, '0'), k, 1, 'SUCCEEDED', md5('old-' || lpad(g::text, 9, '0')), 2 + k,
         now() - interval '7 days' + make_interval(secs => 345600.0 * g / $1 + k * 0.3), 1
       FROM generate_series(1, $1::int) g, generate_series(0, ${ATTEMPTS - 1}) k`,
      [records],
    );
  });
  say('vacuum analyze');
  await database.db.query('VACUUM (ANALYZE) execution_record, execution_attempt');
  // The seed leaves gigabytes of dirty pages: written out now, not during the idle baseline
  // (a first run measured an idle p99 of 1.25 s while Postgres flushed them).
  say('checkpoint');
  await database.db.query('CHECKPOINT').catch((err: Error) => say(`checkpoint refused (${err.message}): the idle baseline may include the seed's writes`));
}

export async function measureRetentionDrain(options: RetentionDrainOptions): Promise<RetentionDrainResult> {
  const { say } = options;
  const started = Date.now();
  const database = await createTestDatabase();
  try {
    say(`retention: seeding a live store of ${options.live.toLocaleString('en')} executions`);
    await seedStore(database.db, {
      executions: options.live,
      rejects: Math.floor(options.live / 2),
      rebuildIndexes: options.live >= 100_000,
      progress: (line) => say(`  ${line}`),
    });
    await seedBacklog(database, options.records, (line) => say(`  ${line}`));
    const seedSeconds = Math.round((Date.now() - started) / 1000);
    const settings = {
      'pipeline.retention.succeeded-executions': '2d',
      'pipeline.retention.interval': `${options.intervalMs}ms`,
      'pipeline.retention.duty-cycle': options.dutyCycle,
      'pipeline.retention.batch-size': options.batchSize,
    };
    const countRecords = async (where: string) =>
      Number((await database.db.query<{ n: string }>(`SELECT count(*) AS n FROM execution_record WHERE ${where}`)).rows[0].n);
    const pastRetention = `status = 'SUCCEEDED' AND created_at < now() - interval '2 days'`;
    const backlogRecords = await countRecords(pastRetention);
    const liveRecordsBefore = await countRecords(`NOT (${pastRetention})`);
    // The service's own retention loop waits a day; the measured one (below) is the only deleter.
    const bench = await startBenchService({
      log: options.log,
      temporalAddress: options.temporalAddress,
      database,
      settings: { ...settings, 'pipeline.retention.interval': '1d' },
    });
    let result: Omit<
      RetentionDrainResult,
      'records' | 'live' | 'attemptsPerRecord' | 'seedSeconds' | 'backlogRecords' | 'liveRecordsBefore' | 'liveRecordsAfter'
    >;
    try {
      for (let i = 0; i < 10; i++) await bench.submit(`warm-${i}`);
      say(`retention: ${options.idleSubmissions} ordinary submissions, no retention running`);
      const idle = await submitSteadily(bench, 'idle', options.submitPerSecond, () => false, options.idleSubmissions);
      // The measured loop: the service's Retention class, its policy from the same keys, on the service's pool.
      const passes: Pass[] = [];
      let caughtUp = false;
      const passLog = createLog({
        level: 'info',
        destination: new Writable({
          write(chunk, _encoding, done) {
            const line = JSON.parse(chunk.toString());
            if (line.event === 'retention_pass') {
              passes.push({ endedAt: Date.now(), durationMs: line.durationMs, rounds: line.rounds, deleted: line.deleted, behind: line.behind });
              // Caught up: nothing behind, or only kinds whose count of what is left came to 0.
              if (Object.values(line.behind).every((left) => left === 0)) caughtUp = true;
            } else if (line.level === 'warn' || line.level === 'error') options.log.warn(line);
            done();
          },
        }),
      });
      const config = loadConfig({}, { 'pipeline.store.url': database.url, ...settings });
      const retention = new Retention(bench.service.db, retentionPolicy(config), passLog, undefined, options.intervalMs);
      say(
        `retention: draining ${backlogRecords.toLocaleString('en')} records (interval ${options.intervalMs / 1000} s, duty cycle ${options.dutyCycle}, batch ${options.batchSize}), submissions beside it`,
      );
      const capAt = Date.now() + options.capMs;
      retention.start();
      let lastSaid = 0;
      const during = await submitSteadily(bench, 'drain', options.submitPerSecond, () => {
        if (passes.length > lastSaid) {
          lastSaid = passes.length;
          const deleted = passes.reduce((sum, p) => sum + (p.deleted.execution_record ?? 0), 0);
          say(`retention: pass ${passes.length}: ${deleted.toLocaleString('en')} records deleted so far`);
        }
        return caughtUp || Date.now() > capAt;
      });
      await retention.stop();
      const first = passes[0];
      const last = passes.at(-1);
      const drainStart = first ? first.endedAt - first.durationMs : Infinity;
      const drainMs = first && last ? last.endedAt - drainStart : 0;
      const deleted: Record<string, number> = {};
      for (const pass of passes) for (const [table, n] of Object.entries(pass.deleted)) deleted[table] = (deleted[table] ?? 0) + n;
      const rows = Object.values(deleted).reduce((sum, n) => sum + n, 0);
      const seconds = drainMs / 1000;
      result = {
        intervalMs: options.intervalMs,
        dutyCycle: options.dutyCycle,
        batchSize: options.batchSize,
        drained: caughtUp,
        drainSeconds: Math.round(seconds * 10) / 10,
        passes: passes.length,
        deleted,
        recordsPerSecond: seconds > 0 ? Math.round((deleted.execution_record ?? 0) / seconds) : 0,
        rowsPerSecond: seconds > 0 ? Math.round(rows / seconds) : 0,
        dutyCycleUsed: drainMs > 0 ? Math.round((passes.reduce((sum, p) => sum + p.durationMs, 0) / drainMs) * 100) / 100 : 0,
        idle: latencySummary(idle),
        // From the first pass's start (the loop's first pass comes one interval after it starts).
        duringDrain: latencySummary(during.filter((sample) => sample.at >= drainStart)),
      };
    } finally {
      await bench.stop();
    }
    const liveRecordsAfter = await countRecords(
      `NOT (${pastRetention}) AND execution_id NOT LIKE 'idle-%' AND execution_id NOT LIKE 'drain-%' AND execution_id NOT LIKE 'warm-%'`,
    );
    return {
      records: options.records,
      live: options.live,
      attemptsPerRecord: ATTEMPTS,
      seedSeconds,
      backlogRecords,
      liveRecordsBefore,
      liveRecordsAfter,
      ...result,
    };
  } finally {
    await database.drop();
  }
}

export function renderRetentionDrain(r: RetentionDrainResult, meta: { date: string; load: string; loadEnd: string }): string {
  const compact = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${n / 1000}k` : String(n));
  const minutes = Math.round((r.drainSeconds / 60) * 10) / 10;
  const passes = `${r.passes} ${r.passes === 1 ? 'pass' : 'passes'}`;
  const drainMet = r.drained && r.drainSeconds < 15 * 60 * (r.records / 1_500_000);
  const p99Ratio = r.idle.p99 > 0 ? Math.round((r.duringDrain.p99 / r.idle.p99) * 100) / 100 : 0;
  const p50Ratio = r.idle.p50 > 0 ? Math.round((r.duringDrain.p50 / r.idle.p50) * 100) / 100 : 0;
  const deleted = Object.entries(r.deleted)
    .map(([table, n]) => `${table} ${n.toLocaleString('en')}`)
    .join(', ');
  return [
    `Measured ${meta.date} on ${cpus().length} cores, Node ${process.version}; load average (1 / 5 / 15 min) ${meta.load} at the start and ${meta.loadEnd} at the end.`,
    `Backlog: ${r.backlogRecords.toLocaleString('en')} SUCCEEDED executions (${r.attemptsPerRecord} attempt-log rows each) created 3–7 days ago, past \`succeeded-executions\` shortened to 2 days, beside a live store of ${compact(r.live)} executions (none past retention; ${r.liveRecordsBefore.toLocaleString('en')} records before the drain, ${r.liveRecordsAfter.toLocaleString('en')} after); seeded in ${r.seedSeconds} s. Retention: interval ${r.intervalMs / 1000} s, duty cycle ${r.dutyCycle}, batch ${r.batchSize}. Deleted: ${deleted || 'nothing'}.`,
    '',
    '| Figure | Idle | During the drain | Ratio / result | Target |',
    '|---|---|---|---|---|',
    `| Drain of ${compact(r.backlogRecords)} records: first pass's start to the pass that caught up | | ${r.drained ? `${r.drainSeconds} s (${minutes} min), ${passes}` : `**not drained** after ${r.drainSeconds} s, ${passes}`} | **${r.recordsPerSecond.toLocaleString('en')} records/s** (${r.rowsPerSecond.toLocaleString('en')} rows/s with their attempt logs) | 1.5M in < 15 min (${Math.round(1_500_000 / 900).toLocaleString('en')} records/s): ${drainMet ? 'met' : '**not met**'} |`,
    `| Duty cycle used (time in passes ÷ drain time) | | ${r.dutyCycleUsed} | | ${r.dutyCycle} configured (a pass ends the batch it is in when its share is used) |`,
    `| Ordinary submission p50, ms | ${r.idle.p50} (n ${r.idle.n}) | ${r.duringDrain.p50} (n ${r.duringDrain.n}) | ${p50Ratio} | report |`,
    `| Ordinary submission p99, ms | ${r.idle.p99} | ${r.duringDrain.p99} | **${p99Ratio}** | unaffected (≤ 2× idle): ${p99Ratio <= 2 ? 'met' : '**not met**'} |`,
  ].join('\n');
}
