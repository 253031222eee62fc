/**
 * Ports: a free one for tests and the dev server's side ports, and the start-up check
 * that every port the service is told to listen on is free, so a clash is a start-up
 * error naming its configuration key (exit 2), never a stack trace or a silently adopted
 * stranger on the port.
 */
import { connect, createServer } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { ConfigError } from './errors';

/** A TCP port free on 127.0.0.1 right now (the OS picks it; another process may take it before you bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
      .once('error', reject)
      .listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
  });
}

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

/** Throws a ConfigError naming the key of every port that is taken. */
export async function requireFreePorts(claims: PortClaim[]): Promise<void> {
  const taken: string[] = [];
  for (const claim of claims) {
    if (await portInUse(claim.port, claim.host)) {
      taken.push(
        `${claim.key}: port ${claim.port} on ${claim.host ?? '127.0.0.1'} is already in use${claim.hint ? ` (${claim.hint})` : ''}; stop what holds it or choose another port`,
      );
    }
  }
  if (taken.length > 0) throw new ConfigError(taken.join('\n'));
}

/** Serves `fetch` on host:port; a failure to listen is a ConfigError naming `key`. */
export async function serveHttp(options: { fetch: Parameters<typeof serve>[0]['fetch']; port: number; hostname?: string; key: string }): Promise<ServerType> {
  const server = serve({ fetch: options.fetch, port: options.port, hostname: options.hostname });
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new ConfigError(`${options.key}: cannot listen on ${options.hostname ?? '*'}:${options.port} (${err.code ?? err.message})`)),
    );
  });
  return server;
}
