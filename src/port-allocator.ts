/**
 * Ports that must be chosen before a process starts (the Temporal dev server's frontend,
 * HTTP, metrics and UI ports; the tests' Postgres clusters and moto). Our own listeners never
 * need this: they bind port 0 and report what they got.
 *
 * The scheme (docs/decisions.md, "Ports chosen before a process starts"):
 * - the band: the larger free stretch of 10000–65535 outside the kernel's ephemeral range
 *   (/proc/sys/net/ipv4/ip_local_port_range), so no outgoing connection and no process that
 *   binds port 0 (a dev server's internal services do) is ever handed a port we chose;
 * - disjoint blocks of the band per vitest worker (`VITEST_POOL_ID`; 0 outside vitest), and
 *   inside a block a starting point from the pid, so concurrent files and runs rarely meet;
 * - a lease per port that is exclusive across every process on the machine: an abstract
 *   Unix socket named after the port (Linux). Two CI runs, several worktrees or two files
 *   cannot lease one port at once, and the kernel drops the lease when its holder dies
 *   (kill -9 included), so there are no stale lock files to clean;
 * - each leased port is verified by binding it before it is handed out.
 * The lease is held until `release()` (or the holder's exit): while it is held, no other
 * allocator hands the port out, even between a server's stop and its restart on that port.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';

export interface PortLease {
  port: number;
  /** Lets other allocators hand the port out again. Idempotent. */
  release(): void;
}

const BAND_FLOOR = 10_000;
const SLOTS = 16;

/** The kernel's ephemeral range (the ports bind(0) and outgoing connections use). */
export function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low > 0 && high >= low) return [low, high];
  } catch {
    // not Linux
  }
  return [49152, 65535]; // IANA's dynamic range (macOS, BSD, Windows)
}

/** This process's block of the band: [first, last]. */
export function portBlock(env: NodeJS.ProcessEnv = process.env): [number, number] {
  const [low, high] = ephemeralRange();
  const below: [number, number] = [BAND_FLOOR, low - 1];
  const above: [number, number] = [high + 1, 65535];
  const [first, last] = below[1] - below[0] >= above[1] - above[0] ? below : above;
  const size = Math.floor((last - first + 1) / SLOTS);
  if (size < 16) throw new Error(`no room for test ports outside the ephemeral range ${low}-${high}`);
  const slot = Number.parseInt(env.VITEST_POOL_ID ?? '0', 10) % SLOTS || 0;
  return [first + slot * size, first + (slot + 1) * size - 1];
}

/** Leases held by this process, by port (a second lease of one port here shares the first). */
const held = new Map<number, { lock: Server | undefined; count: number }>();
let cursor: number | undefined;

/** Takes the machine-wide lease on `port`, or answers false when another process holds it. */
async function lock(port: number): Promise<boolean> {
  const mine = held.get(port);
  if (mine) {
    mine.count++;
    return true;
  }
  if (process.platform !== 'linux') {
    held.set(port, { lock: undefined, count: 1 });
    return true;
  }
  const server = createServer();
  const taken = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(`\0pipeline-orchestrator-port-${port}`, () => resolve(true));
  });
  if (!taken) return false;
  server.unref();
  held.set(port, { lock: server, count: 1 });
  return true;
}

function unlock(port: number): void {
  const mine = held.get(port);
  if (!mine || --mine.count > 0) return;
  held.delete(port);
  mine.lock?.close();
}

/** Whether `port` can be bound on every IPv4 address right now (nothing listens on it). */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '0.0.0.0', () => probe.close(() => resolve(true)));
  });
}

function leaseOf(port: number): PortLease {
  let released = false;
  return {
    port,
    release() {
      if (released) return;
      released = true;
      unlock(port);
    },
  };
}

/** A port from this process's block, leased machine-wide and verified free by binding it. */
export async function leasePort(): Promise<PortLease> {
  const [first, last] = portBlock();
  const size = last - first + 1;
  cursor ??= (process.pid * 7919) % size;
  for (let tried = 0; tried < size; tried++) {
    const port = first + (cursor++ % size);
    if (held.has(port) || !(await lock(port))) continue;
    if (await bindable(port)) return leaseOf(port);
    unlock(port);
  }
  throw new Error(`no free port left in ${first}-${last}`);
}

/**
 * Leases a port the caller was given (configuration, or a port kept across a restart):
 * undefined when another of our processes holds its lease or something listens on it.
 * A lease this process already holds is shared.
 */
export async function leaseGivenPort(port: number): Promise<PortLease | undefined> {
  const mine = held.has(port);
  if (!(await lock(port))) return undefined;
  if (mine || (await bindable(port))) return leaseOf(port);
  unlock(port);
  return undefined;
}
