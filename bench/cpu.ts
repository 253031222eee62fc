/**
 * CPU time by process, to say what dominates a variant's cost: this Node process (load
 * generator + worker), the Temporal dev server, and the Postgres backends serving the
 * benchmark's own database. Read from /proc (Linux), in milliseconds of user + system time.
 *
 * Postgres: only backends whose process title names the benchmark's database count, so
 * other clients of a shared server (colleagues' test runs) do not; shared background
 * processes (WAL writer, checkpointer, autovacuum) are not attributable and not counted.
 * Backends are followed by pid: one that connects during a round counts from zero, one
 * that exits loses only its last slice (the old sum over all processes went negative).
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

/** CPU ms by pid of the Postgres backends serving `database` (every postgres process when absent). */
function postgresCpuMs(database?: string): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/comm`, 'utf8').trim().startsWith('postgres')) continue;
      // A backend's title: "postgres: <user> <database> <host>(<port>) <state>".
      if (
        database &&
        !readFileSync(`/proc/${entry}/cmdline`, 'utf8')
          .split(/[\s\0]+/)
          .includes(database)
      )
        continue;
      byPid.set(entry, procCpuMs(entry));
    } catch {
      // process ended
    }
  }
  return byPid;
}

export interface CpuSample {
  node: number;
  temporal: number;
  postgres: number;
}

export interface CpuSnapshot {
  node: number;
  temporal: number;
  postgres: Map<string, number>;
}

export function cpuSnapshot(temporalPid?: number, database?: string): CpuSnapshot {
  const usage = process.cpuUsage();
  return { node: (usage.user + usage.system) / 1000, temporal: temporalPid ? procCpuMs(temporalPid) : 0, postgres: postgresCpuMs(database) };
}

export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot, per: number): CpuSample {
  const round = (n: number) => Number((n / per).toFixed(2));
  let postgres = 0;
  for (const [pid, ms] of after.postgres) postgres += ms - (before.postgres.get(pid) ?? 0);
  return { node: round(after.node - before.node), temporal: round(after.temporal - before.temporal), postgres: round(postgres) };
}
