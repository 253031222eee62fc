/**
 * CPU time by process, to say what dominates a variant's cost: this Node process (load
 * generator + worker), the Temporal dev server, and every Postgres process. Read from
 * /proc (Linux), in milliseconds of user + system time.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

function procCpuMs(pid: number | string): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

function postgresCpuMs(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim().startsWith('postgres')) total += procCpuMs(entry);
    } catch {
      // process ended
    }
  }
  return total;
}

export interface CpuSample {
  node: number;
  temporal: number;
  postgres: number;
}

export function cpuSnapshot(temporalPid?: number): CpuSample {
  const usage = process.cpuUsage();
  return { node: (usage.user + usage.system) / 1000, temporal: temporalPid ? procCpuMs(temporalPid) : 0, postgres: postgresCpuMs() };
}

export function cpuDelta(before: CpuSample, after: CpuSample, per: number): CpuSample {
  const round = (n: number) => Number((n / per).toFixed(2));
  return { node: round(after.node - before.node), temporal: round(after.temporal - before.temporal), postgres: round(after.postgres - before.postgres) };
}
