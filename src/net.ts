/**
 * Ports: the start-up check that every port the service is told to listen on is free, so a
 * clash is a start-up error naming its configuration key (exit 2), never a stack trace or a
 * silently adopted stranger on the port; and who listens on a port. Our own listeners take
 * port 0 and report the port they got (boundPort); ports that must be chosen before a process
 * starts come from src/port-allocator.ts. Nothing here picks a port, closes it and hopes.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { ConfigError } from './errors';

/** Whether something accepts connections on host:port, or the port cannot be bound there. */
export async function portInUse(port: number, host = '127.0.0.1'): Promise<boolean> {
  const answers = await new Promise<boolean>((resolve) => {
    const socket = connect({ port, host });
    const done = (listening: boolean) => {
      socket.destroy();
      resolve(listening);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true)).once('error', () => done(false));
  });
  if (answers) return true;
  return new Promise<boolean>((resolve) => {
    const server = createServer()
      .once('error', () => resolve(true))
      .listen(port, host, () => server.close(() => resolve(false)));
  });
}

/** A port the service will listen on, and the configuration key that sets it. */
export interface PortClaim {
  key: string;
  port: number;
  host?: string;
  /** what usually holds it, for the message */
  hint?: string;
}

/** The start-up error for a port something else holds, naming its key. */
export function portTakenMessage(claim: PortClaim): string {
  return `${claim.key}: port ${claim.port} on ${claim.host ?? '127.0.0.1'} is already in use${claim.hint ? ` (${claim.hint})` : ''}; stop what holds it or choose another port`;
}

/** Throws a ConfigError naming the key of every port that is taken. */
export async function requireFreePorts(claims: PortClaim[]): Promise<void> {
  const taken: string[] = [];
  // Port 0 is bound to whatever is free and reported; nothing to check before.
  for (const claim of claims.filter((c) => c.port !== 0)) {
    if (await portInUse(claim.port, claim.host)) {
      taken.push(portTakenMessage(claim));
    }
  }
  if (taken.length > 0) throw new ConfigError(taken.join('\n'));
}

/** The port a listening server got (the one it was given, or the kernel's pick for 0). */
export function boundPort(server: ServerType | Server): number {
  return (server.address() as AddressInfo).port;
}

/** How long a client may take to send a request's headers, and the whole request (ms); Node answers 408 past either. */
export interface RequestTimeouts {
  headersMs: number;
  requestMs: number;
}

/**
 * Serves `fetch` on host:port (0 = any free port: read it with boundPort); a failure to listen is a ConfigError naming `key`.
 * `timeouts` bound slow clients; Node checks them every `min(1 s, headersMs / 2)` (its default, 30 s, would let a slow client hold a connection that much longer).
 */
export async function serveHttp(options: {
  fetch: Parameters<typeof serve>[0]['fetch'];
  port: number;
  hostname?: string;
  key: string;
  timeouts?: RequestTimeouts;
}): Promise<ServerType> {
  const { timeouts } = options;
  const serverOptions = timeouts
    ? {
        headersTimeout: timeouts.headersMs,
        requestTimeout: timeouts.requestMs,
        connectionsCheckingInterval: Math.max(10, Math.min(1_000, Math.floor(timeouts.headersMs / 2))),
      }
    : undefined;
  const server = serve({ fetch: options.fetch, port: options.port, hostname: options.hostname, ...(serverOptions ? { serverOptions } : {}) });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(
          err.code === 'EADDRINUSE'
            ? portTakenMessage({ key: options.key, port: options.port, host: options.hostname })
            : `${options.key}: cannot listen on ${options.hostname ?? '*'}:${options.port} (${err.code ?? err.message})`,
        ),
      ),
    );
  });
  return server;
}

/**
 * The pids of the processes holding a socket that listens on TCP `port` (Linux: the socket's
 * inode from /proc/net/tcp{,6}, found among /proc/<pid>/fd); undefined where /proc cannot say.
 * Used to make sure the process we started is the one serving a port, not a stranger.
 */
export function listenerPids(port: number): number[] | undefined {
  const inodes = new Set<string>();
  try {
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
        const fields = line.trim().split(/\s+/);
        // fields: sl local_address rem_address st … inode (index 9); st 0A = LISTEN
        if (fields.length < 10 || fields[3] !== '0A') continue;
        if (Number.parseInt(fields[1].split(':').at(-1)!, 16) === port) inodes.add(`socket:[${fields[9]}]`);
      }
    }
  } catch {
    return undefined;
  }
  const pids: number[] = [];
  if (inodes.size === 0) return pids;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      try {
        if (inodes.has(readlinkSync(`/proc/${entry}/fd/${fd}`))) {
          pids.push(Number(entry));
          break;
        }
      } catch {
        // closed meanwhile
      }
    }
  }
  return pids;
}
