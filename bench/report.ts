/** Renders benchmark results as the table in BENCHMARKS.md (between the bench markers). */
import type { BenchResults } from './suite';

const s = (x: { min: number; median: number; max: number }) => `${x.median} (${x.min}–${x.max})`;

export function renderTable(results: BenchResults): string {
  const { meta, figures } = results;
  const f = figures;
  const rows: string[] = ['| # | Figure | Engine | Bare Temporal | Ratio / result | Target |', '|---|---|---|---|---|---|'];
  if (f.engineOverhead) {
    const o = f.engineOverhead;
    rows.push(
      `| 1 | Executions/s, ${o.steps} no-op steps, N=${o.n}, concurrency ${o.concurrency} | ${s(o.engine)} | ${s(o.bare)} | **${s(o.ratio)}** | ${o.target} |`,
    );
    if (o.cpuMsPerExecution) {
      const c = (x: { node: number; temporal: number; postgres: number }) => `node ${x.node} · temporal ${x.temporal} · postgres ${x.postgres}`;
      rows.push(
        `| 1b | CPU ms per execution, by process | ${c(o.cpuMsPerExecution.engine)} | ${c(o.cpuMsPerExecution.bare)} | ${o.cpuRatio ? `**${s(o.cpuRatio)}** (all processes)` : ''} | ${o.cpuTarget ?? 'what dominates'} |`,
      );
    }
    if (o.floor) {
      const c = (x: { node: number; temporal: number; postgres: number }) => `node ${x.node} · temporal ${x.temporal} · postgres ${x.postgres}`;
      rows.push(
        `| 1c | The floor: bare + one Postgres commit per step and a record row at admission, executions/s · CPU ms | ${s(o.floor.rate)}/s · ${c(o.cpuMsPerExecution.floor)} | | floor ÷ bare **${s(o.floor.ratio)}**, CPU ${s(o.floor.cpuRatio)}; engine ÷ floor **${s(o.floor.engineToFloor)}** | report |`,
      );
    }
  }
  if (f.historyEvents) {
    const h = f.historyEvents;
    rows.push(
      `| 2a | History events per successful step | ${h.engine.perStep} | ${h.bare.perStep} | ${(h.engine.perStep / h.bare.perStep).toFixed(2)}× | ≤ bare (6) |`,
    );
    rows.push(`| 2b | History events per retried attempt | ${h.engine.perRetriedAttempt} | ${h.bare.perRetriedAttempt} | | ≤ 2 |`);
    rows.push(`| 2c | Fixed events per execution (start, end) | ${h.engine.fixed} | ${h.bare.fixed} | | |`);
  }
  if (f.historyBytes) {
    const b = f.historyBytes;
    rows.push(
      `| 2d | History bytes per 5-step execution (per step) | ${b.engine.fiveSteps} (${b.engine.perStep}) | ${b.bare.fiveSteps} (${b.bare.perStep}) | ${(b.engine.fiveSteps / b.bare.fiveSteps).toFixed(2)}× | ≤ bench/bounds.json |`,
    );
  }
  if (f.postgresRoundTrips) {
    const p = f.postgresRoundTrips;
    rows.push(`| 3a | Postgres round trips per successful step | ${s(p.perSuccessfulStep)} | 0 | | ≤ 2 |`);
    rows.push(`| 3b | Postgres round trips per Command step | ${s(p.perCommandStep)} | 0 | | ≤ 3 |`);
    rows.push(`| 3c | Postgres round trips per 5-step execution (with admission) | ${s(p.perFiveStepExecution)} | 0 | | |`);
  }
  if (f.stepCommit) {
    const c = (x: { writes: number; triggerCalls: number; sharedBuffers: number }) =>
      `${x.writes} writes · ${x.triggerCalls} trigger calls · ${x.sharedBuffers} buffers`;
    rows.push(
      `| 3d | One step commit statement (middle step; last step) | ${c(f.stepCommit.middleStep)}; ${c(f.stepCommit.lastStep)} | | | ≤ bench/bounds.json |`,
    );
  }
  if (f.redriveThroughput) {
    const r = f.redriveThroughput;
    rows.push(
      r.measured
        ? `| 4 | Re-drive admissions/s, ${r.count} at concurrency ${r.concurrency} (p50 / p99 ms: ${r.latencyMs.p50} / ${r.latencyMs.p99}) | ${s(r.redrive)} | ${s(r.bare)} | **${s(r.ratio)}** | ${r.target} |`
        : `| 4 | Re-drive admissions/s | not measured: ${r.reason} | | | ≥ 0.7 |`,
    );
    const a = r.perAdmission;
    if (r.measured && a) {
      const calls = (c: Record<string, number>) =>
        Object.entries(c)
          .map(([method, n]) => `${n} ${method}`)
          .join(' + ') || '0';
      const cpu = (c: { node: number; temporal: number; postgres: number }) => `node ${c.node} · temporal ${c.temporal} · postgres ${c.postgres}`;
      rows.push(
        `| 4b | One admission: Postgres statements · Temporal calls · CPU ms by process | ${a.postgresStatements} · ${calls(a.temporalCalls)} · ${cpu(a.cpuMs.redrive)} | 0 · ${calls(a.bareTemporalCalls)} · ${cpu(a.cpuMs.bare)} | | ≤ bench/bounds.json |`,
      );
    }
  }
  if (f.redriveThroughput?.floor) {
    const fl = f.redriveThroughput.floor;
    const c = fl.cpuMs;
    rows.push(
      `| 4c | The floor: one guarded Postgres write then the raw start, behind a bare \`node:http\` route (p50 / p99 ms: ${fl.latencyMs.p50} / ${fl.latencyMs.p99}); CPU ms | ${s(fl.rate)}/s · node ${c.node} · temporal ${c.temporal} · postgres ${c.postgres} | | floor ÷ start **${s(fl.ratio)}** | report |`,
    );
  }
  if (f.redriveAlone?.measured) {
    const r = f.redriveAlone;
    const c = (x: { node: number; temporal: number; postgres: number }) => `node ${x.node} · temporal ${x.temporal} · postgres ${x.postgres}`;
    rows.push(
      `| 4d | Re-drive admissions/s alone: every variant's runs held on a queue no worker polls until its window ends (p50 / p99 ms: ${r.latencyMs.p50} / ${r.latencyMs.p99}; floor ${r.floor.latencyMs.p50} / ${r.floor.latencyMs.p99}); CPU ms per admission | ${s(r.redrive)} · ${c(r.perAdmission.cpuMs.redrive)} | ${s(r.bare)} · ${c(r.perAdmission.cpuMs.bare)} | **${s(r.ratio)}**; floor ÷ start ${s(r.floor.ratio)} (floor CPU ${c(r.floor.cpuMs)}) | ${r.target} |`,
    );
  }
  if (f.workerMemory) {
    const m = f.workerMemory;
    rows.push(
      `| 5a | Worker RSS MB per 1,000 executions parked in retry backoff (idle → parked) | ${m.mbPer1000Parked} (${m.idle.median} → ${m.parkedInRetryBackoff.median} MB) | ${m.bare ? `${m.bare.mbPer1000Parked} (${m.bare.idle.median} → ${m.bare.parkedInRetryBackoff.median} MB)` : ''} | ${m.parkedRatio ?? ''} | ≤ 70 |`,
    );
    rows.push(
      `| 5b | Worker RSS MB per 1,000 executions running (→ with them) | ${m.mbPer1000Running} (→ ${m.parkedPlusRunning.median} MB) | ${m.bare ? `${m.bare.mbPer1000Running} (→ ${m.bare.parkedPlusRunning.median} MB)` : ''} | | report |`,
    );
    if (m.boundedCache) {
      const b = m.boundedCache;
      rows.push(
        `| 5c | Worker RSS MB per 1,000 parked, workflow cache bounded to ${b.maxCachedWorkflows} (\`max-cached-workflows\`) | ${b.engine.mbPer1000Parked} (${b.engine.idle.median} → ${b.engine.parkedInRetryBackoff.median} MB) | ${b.bare.mbPer1000Parked} (${b.bare.idle.median} → ${b.bare.parkedInRetryBackoff.median} MB) | ${b.parkedRatio ?? ''} | ≤ 70 |`,
      );
    }
    if (m.bare) {
      rows.push(
        `| 5d | V8 heap MB per 1,000 parked after a full collection (every run cached; cache bounded) | ${m.heapMbPer1000Parked}; ${m.boundedCache?.engine.heapMbPer1000Parked ?? ''} | ${m.bare.heapMbPer1000Parked}; ${m.boundedCache?.bare.heapMbPer1000Parked ?? ''} | | report |`,
      );
    }
  }
  if (f.dlqPublish) {
    rows.push(`| 6 | DLQ publish, provider postgres, envelopes/s (concurrency 16) | ${s(f.dlqPublish.postgres.rate)} | | | report |`);
  }
  const header = [
    `Measured ${String(meta.date).slice(0, 10)} on ${meta.cores} cores (${meta.cpuModel}), Node ${meta.node}, ${meta.temporalCli}.`,
    `Runs per figure: ${(meta.options as any).runs}; figures are median (min–max). Dev server: \`${meta.devServer}\`.`,
    `Worker: ${JSON.stringify(meta.worker)}.`,
    ...(meta.loadAverage
      ? [`Load average (1 / 5 / 15 min): ${(meta.loadAverage as any).start} at the start, ${(meta.loadAverage as any).end} at the end.`]
      : []),
  ];
  return [...header, '', ...rows].join('\n');
}

/** Replaces the block between `<!-- {name}:start -->` and `<!-- {name}:end -->` (appended when absent). */
export function replaceBlock(document: string, table: string, name = 'bench'): string {
  const start = `<!-- ${name}:start -->`;
  const end = `<!-- ${name}:end -->`;
  const block = `${start}\n${table}\n${end}`;
  if (document.includes(start) && document.includes(end)) {
    return document.slice(0, document.indexOf(start)) + block + document.slice(document.indexOf(end) + end.length);
  }
  return `${document.trimEnd()}\n\n${block}\n`;
}
