/**
 * Figure 1f: the fast path (docs/decisions.md, "The fast path") side by side with the plain
 * engine and bare Temporal both ways, in the same rounds on the same worker: executions/s and
 * CPU ms per execution by process for 5 no-op steps through the engine (regular activities),
 * the engine on the fast path (local activities), a bare workflow of 5 activities and one of
 * 5 local activities; history events and bytes per step from real histories; Postgres
 * statements per execution; and the latency of a three-step execution from submit to its
 * result, one at a time, on both engine paths. The load average is recorded beside them: the
 * ratios hold within one run, the absolute figures move with the machine.
 */
import { loadavg } from 'node:os';
import { cpuDelta, cpuSnapshot, type CpuSample } from './cpu';
import { historyBytes } from './history-bytes';
import { percentile, pool, spread } from './stats';
import type { Bench } from './suite';

const VARIANTS = ['engine', 'engineFast', 'bare', 'bareLocal'] as const;
type Variant = (typeof VARIANTS)[number];

const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ');

function runOne(bench: Bench, variant: Variant, steps: 1 | 5): Promise<string> {
  switch (variant) {
    case 'engine':
      return bench.runEngine(`noop${steps}`);
    case 'engineFast':
      return bench.runEngine(`noop${steps}fast`);
    case 'bare':
      return bench.runBare(steps);
    case 'bareLocal':
      return bench.runBareLocal(steps);
  }
}

export async function measureFastPath(bench: Bench) {
  const { options, say } = bench;
  const database = new URL(bench.database.url).pathname.slice(1);
  const loadStart = load();
  const rates: Record<Variant, number[]> = { engine: [], engineFast: [], bare: [], bareLocal: [] };
  const cpu: Record<Variant, CpuSample[]> = { engine: [], engineFast: [], bare: [], bareLocal: [] };
  const ratios = { fastToBare: [] as number[], fastToBareLocal: [] as number[], fastToEngine: [] as number[] };
  for (let round = 0; round < options.runs; round++) {
    const got = {} as Record<Variant, number>;
    // Each variant first, second, third and last as often as the others (rotations of the four).
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length]);
    for (const variant of order) {
      const before = cpuSnapshot(bench.temporalPid, database);
      const started = performance.now();
      await pool(options.n, options.concurrency, async () => void (await runOne(bench, variant, 5)));
      got[variant] = options.n / ((performance.now() - started) / 1000);
      rates[variant].push(got[variant]);
      cpu[variant].push(cpuDelta(before, cpuSnapshot(bench.temporalPid, database), options.n));
    }
    ratios.fastToBare.push(got.engineFast / got.bare);
    ratios.fastToBareLocal.push(got.engineFast / got.bareLocal);
    ratios.fastToEngine.push(got.engineFast / got.engine);
    say(
      `fast path ${round + 1}/${options.runs}: engine ${got.engine.toFixed(1)}/s, fast path ${got.engineFast.toFixed(1)}/s, bare ${got.bare.toFixed(1)}/s, bare local ${got.bareLocal.toFixed(1)}/s; fast ÷ bare ${(got.engineFast / got.bare).toFixed(3)}, fast ÷ bare local ${(got.engineFast / got.bareLocal).toFixed(3)}`,
    );
  }
  const cpuMedian = (samples: CpuSample[]) => {
    const node = spread(samples.map((x) => x.node)).median;
    const temporal = spread(samples.map((x) => x.temporal)).median;
    const postgres = spread(samples.map((x) => x.postgres)).median;
    return { node, temporal, postgres, total: Number((node + temporal + postgres).toFixed(2)) };
  };

  // History events and bytes per step: 5-step minus 1-step executions, per step.
  const events: Record<string, { oneStep: number; fiveSteps: number; perStep: number; bytesPerStep: number; fiveStepBytes: number }> = {};
  for (const variant of VARIANTS) {
    const one = await bench.client.workflow.getHandle(await runOne(bench, variant, 1)).fetchHistory();
    const five = await bench.client.workflow.getHandle(await runOne(bench, variant, 5)).fetchHistory();
    const [e1, e5] = [one.events?.length ?? 0, five.events?.length ?? 0];
    const [b1, b5] = [historyBytes(one).total, historyBytes(five).total];
    events[variant] = { oneStep: e1, fiveSteps: e5, perStep: (e5 - e1) / 4, bytesPerStep: (b5 - b1) / 4, fiveStepBytes: b5 };
  }

  // Latency of a three-step execution, submit to result, one at a time; and the Postgres statements each made.
  const latencyCount = Math.min(options.n, 200);
  // Bytes the store keeps per execution: the bench database's tables and indexes grown over the pass (in 8 kB pages, so read over many).
  const storedBytes = async () =>
    Number(
      (
        await bench.database.db.query<{ bytes: string }>(
          `SELECT sum(pg_total_relation_size(c.oid))::bigint AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')`,
        )
      ).rows[0].bytes,
    );
  const latency = async (run: () => Promise<string>) => {
    const samples: number[] = [];
    const bytesBefore = await storedBytes();
    const queriesBefore = bench.database.db.stats.queries;
    for (let i = 0; i < latencyCount; i++) {
      const started = performance.now();
      await run();
      samples.push(performance.now() - started);
    }
    const statements = (bench.database.db.stats.queries - queriesBefore) / latencyCount;
    const bytes = ((await storedBytes()) - bytesBefore) / latencyCount;
    const round = (n: number) => Number(n.toFixed(1));
    return {
      p50: round(percentile(samples, 50)),
      p99: round(percentile(samples, 99)),
      n: latencyCount,
      postgresStatementsPerExecution: round(statements),
      storedBytesPerExecution: Math.round(bytes),
    };
  };
  // Bare Temporal's three steps the same way (client start to result, no store): the floor the
  // engine's latency stands on, so a target under it is read against the server, not the engine.
  say(`three-step latency: ${latencyCount} executions one at a time, each path, and bare Temporal both ways`);
  const threeStep = {
    plain: await latency(() => bench.runEngine('noop3')),
    fastPath: await latency(() => bench.runEngine('noop3fast')),
    bare: await latency(() => bench.runBare(3)),
    bareLocal: await latency(() => bench.runBareLocal(3)),
  };
  const p = (x: { p50: number; p99: number }) => `${x.p50}/${x.p99}`;
  say(
    `three-step latency p50/p99 ms: plain ${p(threeStep.plain)}, fast path ${p(threeStep.fastPath)}, bare ${p(threeStep.bare)}, bare local ${p(threeStep.bareLocal)}`,
  );

  return {
    unit: 'executions/s of 5 no-op steps',
    n: options.n,
    concurrency: options.concurrency,
    load: { start: loadStart, end: load(), note: '1 / 5 / 15 min load average, 2 cores shared' },
    rate: { engine: spread(rates.engine), engineFast: spread(rates.engineFast), bare: spread(rates.bare), bareLocal: spread(rates.bareLocal) },
    ratio: {
      fastToBare: spread(ratios.fastToBare, 3),
      fastToBareLocal: spread(ratios.fastToBareLocal, 3),
      fastToEngine: spread(ratios.fastToEngine, 3),
    },
    targets: 'fast ÷ bare ≥ 1.5, fast ÷ bare local ≥ 0.9, three-step p50 ≤ 40 ms (on a quiet machine)',
    cpuMsPerExecution: {
      engine: cpuMedian(cpu.engine),
      engineFast: cpuMedian(cpu.engineFast),
      bare: cpuMedian(cpu.bare),
      bareLocal: cpuMedian(cpu.bareLocal),
    },
    historyPerStep: events,
    threeStepLatencyMs: threeStep,
  };
}
