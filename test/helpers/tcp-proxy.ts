/**
 * A TCP proxy in front of a real server (Postgres here) that can lose a connection the
 * way a network does: after forwarding a client's statement, before its answer comes
 * back (the statement still runs and commits on the server), or by refusing every
 * connection as a server that is down does.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Forward the next client chunk containing `text`, then drop that client's connection before any answer. */
  cutAfter(text: string): void;
  /** How many connections were cut so. */
  readonly cuts: number;
  /** Drop every connection and refuse new ones (true), or accept again (false). */
  setDown(down: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let cutText: string | undefined;
  let cuts = 0;
  let port = 0;
  const handle = (client: Socket) => {
    const upstream = connect(target.port, target.host);
    sockets.add(client).add(upstream);
    let cutting = false;
    const drop = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('data', (chunk) => {
      upstream.write(chunk);
      if (cutText && chunk.includes(cutText)) {
        cutText = undefined;
        cuts++;
        cutting = true;
        // The server has the statement; the client never hears back. Keep the upstream open until the server answered, so it commits.
        client.destroy();
        upstream.once('data', () => setTimeout(drop, 50));
      }
    });
    upstream.on('data', (chunk) => {
      if (!client.destroyed) client.write(chunk);
    });
    client.on('error', () => cutting || drop()).on('close', () => cutting || drop());
    upstream.on('error', drop).on('close', drop);
  };
  let server: Server = createServer(handle);
  const listen = () => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  await listen();
  port = (server.address() as { port: number }).port;
  return {
    port,
    cutAfter(text) {
      cutText = text;
    },
    get cuts() {
      return cuts;
    },
    async setDown(down) {
      if (down) {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          for (const socket of sockets) socket.destroy();
          sockets.clear();
        });
      } else {
        server = createServer(handle);
        await listen();
      }
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
