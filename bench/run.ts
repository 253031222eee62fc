/**
 * `npm run bench`: runs the suite against a fresh dev server and a fresh Postgres
 * database, writes bench/results/latest.json and updates the table in BENCHMARKS.md.
 *
 *   npm run bench                      # the report: N=500, 5 runs
 *   npm run bench -- --n 100 --runs 3  # quicker, for a look
 *   npm run bench -- --smoke           # N=5, proves the harness runs; writes nothing
 *   npm run bench -- --only overhead   # some figures only (overhead, fastpath, events, bytes, commit, roundtrips, redrive, memory, dlq); writes nothing
 *   npm run bench -- --only fastpath   # figure 1f: the engine with and without the fast path beside bare Temporal with activities
 *                                      # and with local activities, history per step, three-step latency p50/p99
 *   npm run bench -- --only overhead,redrive,memory --record   # some figures, recorded: writes latest.json and the table
 *   npm run bench -- --only growth     # the growth figure alone (10k vs 10M executions, ~15 min): writes
 *                                      # bench/results/growth.json and its table in BENCHMARKS.md
 *   npm run bench -- --only growth --growth-sizes 10000,200000   # a quicker look; writes nothing
 *   npm run bench -- --only jobrate    # a bulk re-drive job's rate as a ceiling: 1,000 items at 10, 50 and 100/s, 3 runs
 *                                      # each (~15 min): achieved ÷ asked and the busiest second; writes
 *                                      # bench/results/job-rate.json and its table (with --job-items/--job-rates/--job-runs: writes nothing)
 *   npm run bench -- --only jobrate --job-held   # the same with the re-driven runs held on a task queue of their own until
 *                                      # the job has admitted every item: the job's own path alone (its own block and job-rate-held.json)
 *   npm run bench -- --only fleet --fleet-roles split   # the same with the API and the worker in two processes (its own block)
 *   npm run bench -- --only fleet --fleet-roles bulk    # the same with the job's runs on a worker process of their own under
 *                                      # nice -n 19 (--fleet-bulk-nice N: another value; its own block, fleet-bulk.json)
 *   npm run bench -- --only fleet --fleet-roles held    # the same with the job's runs held while it is measured, as if
 *                                      # they ran on machines of their own, then run to their end (its own block, fleet-held.json)
 *   npm run bench -- --only fleet      # live traffic beside a bulk job: submission p50/p99 idle and under a 50/s job of
 *                                      # 1,000 items, a second job's first admission behind the first's runs; 3 runs (~6 min):
 *                                      # writes bench/results/fleet.json and its table (with --fleet-*: writes nothing)
 *   npm run bench -- --only retention  # retention draining 1.5M records past retention, submissions beside it (seed ~5 min,
 *                                      # drain ≤ 15 min): writes bench/results/retention.json and its table
 *                                      # (with --retention-records/--retention-live: writes nothing)
 *   npm run bench -- --only jobrate,fleet,retention   # the three fleet figures, one after another
 *   npm run bench -- --only overhead --floor-with metadata   # the floor (1c) carrying one part of the engine's own
 *                                      # (metadata, heartbeat, summary, bytes; comma-separated): what that part costs; writes nothing
 *   npm run bench -- --variant engine  # figure 1's executions for one variant alone (bench/profile.ts profiles it); writes nothing
 *   npm run bench -- --only overhead --temporal-address temporal.internal:7233   # against a Temporal of your own instead of
 *                                      # a dev server of the bench's own (every figure, bare and engine alike); writes nothing
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { createLog } from '../src/log';
import { temporalAddressProblem } from './args';
import { measureGrowth, renderGrowth } from './growth';
import { measureFleet, renderFleet } from './fleet';
import { jobRateLoad, measureJobRate, renderJobRate } from './job-rate';
import { measureRetentionDrain, renderRetentionDrain } from './retention-drain';
import { renderTable, replaceBlock } from './report';
import { runBenchmarks } from './suite';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '500' },
    runs: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '50' },
    memory: { type: 'string', default: '1000' },
    dlq: { type: 'string', default: '500' },
    redrive: { type: 'string', default: '1000' },
    smoke: { type: 'boolean', default: false },
    record: { type: 'boolean', default: false },
    only: { type: 'string' },
    variant: { type: 'string' },
    'floor-with': { type: 'string' },
    'growth-sizes': { type: 'string', default: '10000,10000000' },
    'growth-samples': { type: 'string', default: '31' },
    'job-items': { type: 'string', default: '1000' },
    'job-rates': { type: 'string', default: '10,50,100' },
    'job-runs': { type: 'string', default: '3' },
    'job-held': { type: 'boolean', default: false },
    'fleet-items': { type: 'string', default: '1000' },
    'fleet-runs': { type: 'string', default: '3' },
    'fleet-hold-ms': { type: 'string', default: '5000' },
    'fleet-roles': { type: 'string', default: 'one' },
    'fleet-bulk-nice': { type: 'string', default: '19' },
    'fleet-yield': { type: 'string', default: 'false' },
    'retention-records': { type: 'string', default: '1500000' },
    'retention-live': { type: 'string', default: '100000' },
    'retention-interval-ms': { type: 'string', default: '60000' },
    'temporal-address': { type: 'string' },
  },
});

const number = (name: string, text: string, min: number) => {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`bench: --${name} must be a whole number ≥ ${min} (got ${text})\n`);
    process.exit(2);
  }
  return value;
};

// A Temporal of the caller's own (host:port, or [IPv6]:port) instead of a dev server the bench starts for each figure:
// bare Temporal and the engine are measured against the same server, so the ratios hold; the figures are printed, never
// recorded (BENCHMARKS.md keeps this machine's own).
const temporalAddress = values['temporal-address'];
if (temporalAddress !== undefined) {
  const problem = temporalAddressProblem(temporalAddress);
  if (problem) {
    process.stderr.write(`bench: ${problem}\n`);
    process.exit(2);
  }
  if (values.record) {
    process.stderr.write('bench: --temporal-address measures against another Temporal and is never recorded (drop --record)\n');
    process.exit(2);
  }
}
const recordable = temporalAddress === undefined;

const smoke = values.smoke;
const options = smoke
  ? { n: 5, runs: 1, concurrency: 5, memoryCount: 5, dlqCount: 5, redriveCount: 5 }
  : {
      n: number('n', values.n!, 1),
      runs: number('runs', values.runs!, 1),
      concurrency: number('concurrency', values.concurrency!, 1),
      memoryCount: number('memory', values.memory!, 1),
      dlqCount: number('dlq', values.dlq!, 1),
      redriveCount: number('redrive', values.redrive!, 1),
    };

const only = values.only?.split(',').map((name) => name.trim());
const started = Date.now();
const progress = (line: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);

// The growth figure seeds millions of rows: it runs only when asked for, on its own.
if (only?.includes('growth')) {
  const sizes = values['growth-sizes']!.split(',').map((size) => number('growth-sizes', size.trim(), 100));
  const samples = number('growth-samples', values['growth-samples']!, 3);
  const load = loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
  if (temporalAddress !== undefined) progress('growth measures the store alone: --temporal-address does not apply to it');
  const growth = await measureGrowth({ sizes, samples, commits: 100, log: createLog({ level: 'error' }), say: progress });
  const cpu = (await import('node:os')).cpus();
  const loadEnd = loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
  const table = renderGrowth(growth, {
    date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
    load,
    loadEnd,
    machine: `${cpu.length} cores (${cpu[0]?.model}), Node ${process.version}`,
    samples,
  });
  process.stdout.write(`${table}\n`);
  if (values['growth-sizes'] === '10000,10000000' && recordable) {
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/growth.json', `${JSON.stringify({ load, loadEnd, ...growth }, null, 2)}\n`);
    const document = existsSync('BENCHMARKS.md') ? readFileSync('BENCHMARKS.md', 'utf8') : '# Benchmarks\n';
    writeFileSync('BENCHMARKS.md', replaceBlock(document, table, 'growth'));
    progress('wrote bench/results/growth.json and the growth table in BENCHMARKS.md');
  }
  if (only.length === 1) process.exit(0);
}

const stamp = () => new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
/** A fleet figure's table into its own block of BENCHMARKS.md and its raw result into bench/results/<file>, when run at its recorded sizes. */
const record = (block: string, file: string, table: string, result: object, recorded: boolean) => {
  process.stdout.write(`${table}\n`);
  if (!recorded || !recordable) return;
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/${file}`, `${JSON.stringify(result, null, 2)}\n`);
  const document = existsSync('BENCHMARKS.md') ? readFileSync('BENCHMARKS.md', 'utf8') : '# Benchmarks\n';
  writeFileSync('BENCHMARKS.md', replaceBlock(document, table, block));
  progress(`wrote bench/results/${file} and the ${block} table in BENCHMARKS.md`);
};
const defaulted = (...names: (keyof typeof values)[]) =>
  names.every((name) => !process.argv.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`)));

// The bulk re-drive pacing figure: its own fresh dev server and database, only when asked for.
if (only?.includes('jobrate')) {
  const items = number('job-items', values['job-items']!, 2);
  const rates = values['job-rates']!.split(',').map((text) => {
    const rate = Number(text.trim());
    if (!(rate >= 0.1 && rate <= 300)) {
      process.stderr.write(`bench: --job-rates must be numbers from 0.1 to 300 (got ${text})\n`);
      process.exit(2);
    }
    return rate;
  });
  const load = jobRateLoad();
  const held = values['job-held'] === true;
  const result = await measureJobRate({
    items,
    rates,
    runs: number('job-runs', values['job-runs']!, 1),
    held,
    temporalAddress,
    log: createLog({ level: 'error' }),
    say: progress,
  });
  const loadEnd = jobRateLoad();
  const table = renderJobRate(result, { date: stamp(), load, loadEnd });
  const [block, file] = held ? ['jobrate-held', 'job-rate-held.json'] : ['jobrate', 'job-rate.json'];
  record(block, file, table, { load, loadEnd, ...result }, defaulted('job-items', 'job-rates', 'job-runs'));
}

// Live traffic beside a bulk job, and a second job behind the first's runs: its own dev server and database.
if (only?.includes('fleet')) {
  const roles = values['fleet-roles'];
  if (roles !== 'one' && roles !== 'split' && roles !== 'bulk' && roles !== 'held') {
    process.stderr.write(`bench: --fleet-roles must be one, split, bulk or held (got ${roles})\n`);
    process.exit(2);
  }
  const yielding = values['fleet-yield'];
  if (yielding !== 'true' && yielding !== 'false') {
    process.stderr.write(`bench: --fleet-yield must be true or false (got ${yielding})\n`);
    process.exit(2);
  }
  const bulkNice = number('fleet-bulk-nice', values['fleet-bulk-nice']!, 0);
  if (bulkNice > 19) {
    process.stderr.write(`bench: --fleet-bulk-nice must be a nice value from 0 to 19 (got ${bulkNice})\n`);
    process.exit(2);
  }
  const load = jobRateLoad();
  const result = await measureFleet({
    items: number('fleet-items', values['fleet-items']!, 2),
    secondItems: 50,
    ratePerSecond: 50,
    submitPerSecond: 10,
    holdMs: number('fleet-hold-ms', values['fleet-hold-ms']!, 0),
    runs: number('fleet-runs', values['fleet-runs']!, 1),
    roles,
    bulkNice,
    yieldToLive: yielding === 'true',
    temporalAddress,
    log: createLog({ level: 'error' }),
    say: progress,
  });
  const loadEnd = jobRateLoad();
  const table = renderFleet(result, { date: stamp(), load, loadEnd });
  const [block, file] = roles === 'one' ? ['fleet', 'fleet.json'] : [`fleet-${roles}`, `fleet-${roles}.json`];
  record(block, file, table, { load, loadEnd, ...result }, defaulted('fleet-items', 'fleet-runs', 'fleet-hold-ms', 'fleet-yield', 'fleet-bulk-nice'));
}

// Retention draining a seeded backlog, live submissions beside it: its own database and dev server.
if (only?.includes('retention')) {
  const load = jobRateLoad();
  const result = await measureRetentionDrain({
    records: number('retention-records', values['retention-records']!, 1),
    live: number('retention-live', values['retention-live']!, 100),
    intervalMs: number('retention-interval-ms', values['retention-interval-ms']!, 100),
    dutyCycle: 0.5,
    batchSize: 1000,
    submitPerSecond: 10,
    idleSubmissions: 300,
    capMs: 60 * 60_000,
    temporalAddress,
    log: createLog({ level: 'error' }),
    say: progress,
  });
  const loadEnd = jobRateLoad();
  const table = renderRetentionDrain(result, { date: stamp(), load, loadEnd });
  record('retention', 'retention.json', table, { load, loadEnd, ...result }, defaulted('retention-records', 'retention-live', 'retention-interval-ms'));
}
if (only && only.every((name) => ['growth', 'jobrate', 'fleet', 'retention'].includes(name))) process.exit(0);

const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
const loadAtStart = loadAverage();
// One variant of figure 1 alone, for bench/profile.ts: the result as JSON on stdout, nothing written.
if (values.variant !== undefined) {
  if (values.variant !== 'engine' && values.variant !== 'bare') {
    process.stderr.write(`bench: --variant must be engine or bare (got ${values.variant})\n`);
    process.exit(2);
  }
  const alone = await runBenchmarks({ ...options, only: ['overhead'], variant: values.variant, temporalAddress, progress });
  process.stdout.write(`${JSON.stringify(alone.figures.variantAlone)}\n`);
  process.exit(0);
}
const FLOOR_PARTS = ['metadata', 'heartbeat', 'summary', 'bytes'];
const floorWith = values['floor-with']?.split(',').map((part) => part.trim());
const unknownPart = floorWith?.find((part) => !FLOOR_PARTS.includes(part));
if (unknownPart !== undefined) {
  process.stderr.write(`bench: --floor-with takes ${FLOOR_PARTS.join(', ')} (got ${unknownPart})\n`);
  process.exit(2);
}
if (floorWith && values.record) {
  process.stderr.write('bench: --floor-with measures one part of the engine at a time and is never recorded\n');
  process.exit(2);
}
const results = await runBenchmarks({
  ...options,
  only: only?.filter((name) => !['growth', 'jobrate', 'fleet', 'retention'].includes(name)),
  progress,
  floorWith,
  temporalAddress,
});
if (floorWith) results.meta.floorWith = floorWith;
// Absolute figures move with the machine's load: every recorded run says what it was.
results.meta.loadAverage = { start: loadAtStart, end: loadAverage(), note: '1 / 5 / 15 min' };
if (only) results.meta.only = only;
if (temporalAddress !== undefined) results.meta.temporalAddress = temporalAddress;
const table = renderTable(results);
process.stdout.write(`${table}\n`);
// Figure 1f (the fast path) is read in BENCHMARKS.md's own section: its figures as JSON.
if (results.figures.fastPath) process.stdout.write(`fast path (1f): ${JSON.stringify(results.figures.fastPath, null, 2)}\n`);
if (!smoke && (!only || values.record) && recordable) {
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/latest.json', `${JSON.stringify(results, null, 2)}\n`);
  const document = existsSync('BENCHMARKS.md') ? readFileSync('BENCHMARKS.md', 'utf8') : '# Benchmarks\n';
  writeFileSync('BENCHMARKS.md', replaceBlock(document, table));
  process.stderr.write(`bench: wrote bench/results/latest.json and BENCHMARKS.md in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
}
