/**
 * `npm run bench:profile`: where the engine's extra Node CPU goes, from CPU profiles.
 *
 * Runs figure 1's executions (5 no-op steps) for the engine alone, then for bare Temporal alone,
 * each in a benchmark process of its own under `node --cpu-prof` (every thread: the main one,
 * where activities and the Postgres client run, and the workflow threads). Only the samples
 * inside the measured window count (set-up and teardown are left out), and the table gives
 * CPU ms per execution by part of the process, engine against bare. A sampling profile: use it
 * for where the difference is, and figure 1b (`npm run bench`) for how large it is.
 *
 *   npm run bench:profile                # 400 executions each
 *   npm run bench:profile -- --n 1000
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}
type Variant = 'engine' | 'bare';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { n: { type: 'string', default: '400' }, concurrency: { type: 'string', default: '50' } } });
const n = Number(values.n);
if (!Number.isInteger(n) || n < 1) {
  process.stderr.write(`bench:profile: --n must be a whole number ≥ 1 (got ${values.n})\n`);
  process.exit(2);
}

/** The part of the process a sample's function belongs to. */
function partOf(frame: CallFrame, repoRoot = root): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (/node_modules\/(pg|pg-pool|pg-protocol|pg-types|postgres-[a-z]+)\//.test(url) || url.endsWith('/src/store/db.ts')) return 'Postgres client (pg)';
  // The socket calls under it: the engine's statements are the only socket traffic in this process that bare lacks.
  if (functionName === 'writev' || functionName === 'writeBuffer' || /^node:(net|internal\/stream_base_commons|internal\/streams\/)/.test(url))
    return 'socket I/O (Postgres and gRPC)';
  if (url.includes('/node_modules/@temporalio/') || url.includes('/node_modules/@grpc/') || url.includes('/node_modules/rxjs/')) return 'Temporal SDK';
  if (url.includes('workflow-bundle') || url.startsWith('evalmachine') || url === 'node:vm') return 'workflow code and its sandbox';
  if (url.includes(`${repoRoot}src/`)) return "the engine's own code (src/)";
  return 'Node runtime and other';
}

function profileVariant(variant: Variant, dir: string) {
  process.stderr.write(`[profile] ${variant}: ${n} executions under --cpu-prof\n`);
  const run = spawnSync(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      '--import',
      'tsx',
      'bench/run.ts',
      '--only',
      'overhead',
      '--runs',
      '1',
      '--n',
      String(n),
      '--concurrency',
      values.concurrency!,
      '--variant',
      variant,
    ],
    { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (run.status !== 0) throw new Error(`bench --variant ${variant} exited ${run.status}`);
  const result = JSON.parse(run.stdout.trim().split('\n').pop()!) as { n: number; rate: number; window: { startUs: number; endUs: number } };
  const byPart = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
    let at = profile.startTime;
    profile.samples.forEach((id, i) => {
      at += profile.timeDeltas[i];
      const frame = frames.get(id)!;
      if (at < result.window.startUs || at > result.window.endUs || frame.functionName === '(idle)') return;
      const ms = profile.timeDeltas[i] / 1000 / result.n;
      const part = partOf(frame);
      byPart.set(part, (byPart.get(part) ?? 0) + ms);
      const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(root, '').replace(/^.*node_modules\//, '')}:${frame.lineNumber + 1}`;
      byFunction.set(name, (byFunction.get(name) ?? 0) + ms);
    });
  }
  return { rate: result.rate, byPart, byFunction };
}

const work = mkdtempSync(join(tmpdir(), 'bench-profile-'));
try {
  const load = loadavg()[0].toFixed(2);
  const engine = profileVariant('engine', join(work, 'engine'));
  const bare = profileVariant('bare', join(work, 'bare'));
  const sum = (parts: Map<string, number>) => [...parts.values()].reduce((a, b) => a + b, 0);
  const delta = (key: string, e: Map<string, number>, b: Map<string, number>) => (e.get(key) ?? 0) - (b.get(key) ?? 0);
  const parts = [...new Set([...engine.byPart.keys(), ...bare.byPart.keys()])].sort(
    (x, y) => delta(y, engine.byPart, bare.byPart) - delta(x, engine.byPart, bare.byPart),
  );
  const f = (x: number) => x.toFixed(2);
  const lines = [
    `Node CPU ms per execution inside the measured window (${n} executions each; load ${load} at the start, ${loadavg()[0].toFixed(2)} at the end;`,
    `engine ${engine.rate.toFixed(1)}/s, bare ${bare.rate.toFixed(1)}/s):`,
    '',
    '| Part | Engine | Bare | Engine − bare |',
    '|---|---|---|---|',
    ...parts.map(
      (part) => `| ${part} | ${f(engine.byPart.get(part) ?? 0)} | ${f(bare.byPart.get(part) ?? 0)} | ${f(delta(part, engine.byPart, bare.byPart))} |`,
    ),
    `| **all** | ${f(sum(engine.byPart))} | ${f(sum(bare.byPart))} | ${f(sum(engine.byPart) - sum(bare.byPart))} |`,
    '',
    'Functions whose self time grew most (engine − bare, ms per execution):',
    '',
    ...[...new Set([...engine.byFunction.keys(), ...bare.byFunction.keys()])]
      .map((name) => [name, delta(name, engine.byFunction, bare.byFunction)] as const)
      .sort((x, y) => y[1] - x[1])
      .slice(0, 15)
      .map(([name, ms]) => `- ${f(ms)} \`${name}\``),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
