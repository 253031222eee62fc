/**
 * `npm run bench`: runs the suite against a fresh dev server and a fresh Postgres
 * database, writes bench/results/latest.json and updates the table in BENCHMARKS.md.
 *
 *   npm run bench                      # the report: N=500, 5 runs
 *   npm run bench -- --n 100 --runs 3  # quicker, for a look
 *   npm run bench -- --smoke           # N=5, proves the harness runs; writes nothing
 *   npm run bench -- --only overhead   # some figures only (overhead, events, bytes, commit, roundtrips, redrive, memory, dlq); writes nothing
 *   npm run bench -- --only overhead,redrive,memory --record   # some figures, recorded: writes latest.json and the table
 *   npm run bench -- --only growth     # the growth figure alone (10k vs 10M executions, ~15 min): writes
 *                                      # bench/results/growth.json and its table in BENCHMARKS.md
 *   npm run bench -- --only growth --growth-sizes 10000,200000   # a quicker look; writes nothing
 *   npm run bench -- --only jobrate    # a bulk re-drive job's achieved rate (1,000 items at 50/s, 3 runs, ~4 min):
 *                                      # writes its table in BENCHMARKS.md (with --job-items/--job-rate: writes nothing)
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { createLog } from '../src/log';
import { measureGrowth, renderGrowth } from './growth';
import { jobRateLoad, measureJobRate, renderJobRate } from './job-rate';
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
    'growth-sizes': { type: 'string', default: '10000,10000000' },
    'growth-samples': { type: 'string', default: '31' },
    'job-items': { type: 'string', default: '1000' },
    'job-rate': { type: 'string', default: '50' },
    'job-runs': { type: 'string', default: '3' },
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
  if (values['growth-sizes'] === '10000,10000000') {
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/growth.json', `${JSON.stringify({ load, loadEnd, ...growth }, null, 2)}\n`);
    const document = existsSync('BENCHMARKS.md') ? readFileSync('BENCHMARKS.md', 'utf8') : '# Benchmarks\n';
    writeFileSync('BENCHMARKS.md', replaceBlock(document, table, 'growth'));
    progress('wrote bench/results/growth.json and the growth table in BENCHMARKS.md');
  }
  if (only.length === 1) process.exit(0);
}

// The bulk re-drive pacing figure: its own fresh dev server and database, only when asked for.
if (only?.includes('jobrate')) {
  const items = number('job-items', values['job-items']!, 2);
  const rate = Number(values['job-rate']);
  if (!(rate >= 0.1 && rate <= 300)) {
    process.stderr.write(`bench: --job-rate must be a number from 0.1 to 300 (got ${values['job-rate']})\n`);
    process.exit(2);
  }
  const load = jobRateLoad();
  const result = await measureJobRate({
    items,
    ratePerSecond: rate,
    runs: number('job-runs', values['job-runs']!, 1),
    log: createLog({ level: 'error' }),
    say: progress,
  });
  const table = renderJobRate(result, new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC', load);
  process.stdout.write(`${table}\n`);
  if (values['job-items'] === '1000' && values['job-rate'] === '50') {
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/job-rate.json', `${JSON.stringify({ load, ...result }, null, 2)}\n`);
    const document = existsSync('BENCHMARKS.md') ? readFileSync('BENCHMARKS.md', 'utf8') : '# Benchmarks\n';
    writeFileSync('BENCHMARKS.md', replaceBlock(document, table, 'jobrate'));
    progress('wrote bench/results/job-rate.json and the job-rate table in BENCHMARKS.md');
  }
  if (only.length === 1) process.exit(0);
}

const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');
const loadAtStart = loadAverage();
const results = await runBenchmarks({
  ...options,
  only: only?.filter((name) => name !== 'growth' && name !== 'jobrate'),
  progress,
});
// Absolute figures move with the machine's load: every recorded run says what it was.
results.meta.loadAverage = { start: loadAtStart, end: loadAverage(), note: '1 / 5 / 15 min' };
if (only) results.meta.only = only;
const table = renderTable(results);
process.stdout.write(`${table}\n`);
if (!smoke && (!only || values.record)) {
  mkdirSync('bench/results', { recursive: true });
  writeFileSync('bench/results/latest.json', `${JSON.stringify(results, null, 2)}\n`);
  const document = existsSync('BENCHMARKS.md') ? readFileSync('BENCHMARKS.md', 'utf8') : '# Benchmarks\n';
  writeFileSync('BENCHMARKS.md', replaceBlock(document, table));
  process.stderr.write(`bench: wrote bench/results/latest.json and BENCHMARKS.md in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
}
