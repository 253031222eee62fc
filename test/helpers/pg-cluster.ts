/**
 * A throwaway Postgres cluster of its own (initdb in a temp dir, on a leased port: it must be
 * known before the server starts, and stays ours across a crash and restart) for tests
 * that stop and restart Postgres: the shared server colleagues' tests use is never touched.
 * Runs the server binaries as the `postgres` user when this process is root (initdb refuses root).
 */
import { execFile } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { leasePort } from '../../src/port-allocator';

const run = promisify(execFile);

export interface PgCluster {
  /** postgres://postgres@127.0.0.1:port/postgres */
  url: string;
  port: number;
  /** `pg_ctl stop -m immediate`: the server dies as in a crash (no clean shutdown). */
  crash(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

function binDir(): string {
  const root = '/usr/lib/postgresql';
  const version = readdirSync(root).sort((a, b) => Number(b) - Number(a))[0];
  return join(root, version, 'bin');
}

/** `ssl`: PEM files of the server's certificate and key; the server then accepts TLS (ssl=on). */
export async function startPgCluster(options: { ssl?: { cert: string; key: string } } = {}): Promise<PgCluster> {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'pg-cluster-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  chmodSync(dir, 0o700);
  const pg = (tool: string, args: string[]) => (asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args));
  const lease = await leasePort();
  const port = lease.port;
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync']).catch((err) => {
    lease.release();
    throw err;
  });
  let ssl = '';
  if (options.ssl) {
    // The server reads its key only when the postgres user owns it with mode 0600.
    for (const [from, to] of [
      [options.ssl.cert, 'server.crt'],
      [options.ssl.key, 'server.key'],
    ]) {
      copyFileSync(from, join(dir, to));
      chmodSync(join(dir, to), 0o600);
      if (asRoot) await run('chown', ['postgres:postgres', join(dir, to)]);
    }
    ssl = ` -c ssl=on -c ssl_cert_file=${join(dir, 'server.crt')} -c ssl_key_file=${join(dir, 'server.key')}`;
  }
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off${ssl}`, 'start']);
  };
  await start().catch((err) => {
    lease.release();
    throw err;
  });
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async crash() {
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    },
    start,
    async destroy() {
      await pg('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
      lease.release();
    },
  };
}
