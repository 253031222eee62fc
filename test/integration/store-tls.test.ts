/**
 * Postgres TLS: pipeline.store.ca-file turns verification on in the connection string pg
 * uses (sslrootcert + verify-full). Against this machine's Postgres, which has ssl=off, the
 * client then insists on TLS and is refused, which proves TLS is asked for, not skipped.
 * Against a cluster of this test with ssl=on and a certificate made here, the session is
 * encrypted with verification on, and a wrong CA stops start-up naming the key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config/config';
import { ConfigError } from '../../src/errors';
import { createLog } from '../../src/log';
import { startService } from '../../src/runtime';
import { TEST_TOKENS } from '../helpers/engine';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { storeConnectionString } from '../../src/store/db';
import { ADMIN_URL } from '../helpers/postgres';

const caFile = join(mkdtempSync(join(tmpdir(), 'store-ca-')), 'ca.pem');
writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');

describe('storeConnectionString', () => {
  it('adds the CA and verify-full, keeps a verifying sslmode, and leaves a URL without a CA file alone', () => {
    expect(storeConnectionString('postgres://u@db:5432/p')).toBe('postgres://u@db:5432/p');
    const url = new URL(storeConnectionString('postgres://u@db:5432/p', caFile));
    expect(url.searchParams.get('sslmode')).toBe('verify-full');
    expect(url.searchParams.get('sslrootcert')).toBe(caFile);
    expect(new URL(storeConnectionString('postgres://u@db:5432/p?sslmode=verify-ca', caFile)).searchParams.get('sslmode')).toBe('verify-ca');
  });

  it('names the key of an unreadable CA file or a non-verifying sslmode', () => {
    expect(() => storeConnectionString('postgres://u@db/p', '/nonexistent/ca.pem')).toThrow(
      /^pipeline\.store\.ca-file: cannot read \/nonexistent\/ca\.pem: ENOENT/,
    );
    expect(() => storeConnectionString('postgres://u@db/p?sslmode=disable', caFile)).toThrow(
      /pipeline\.store\.ca-file is set but pipeline\.store\.url has sslmode=disable/,
    );
  });

  it('makes pg insist on TLS: a server without TLS is refused rather than used in clear', async () => {
    const client = new pg.Client({ connectionString: storeConnectionString(ADMIN_URL, caFile) });
    await expect(client.connect()).rejects.toThrow(/does not support SSL/);
    await client.end().catch(() => undefined);
  });

  describe('against a Postgres server with TLS on (a cluster of this test, certificates made here)', () => {
    let cluster: PgCluster;
    const dir = mkdtempSync(join(tmpdir(), 'store-tls-'));
    const file = (name: string) => join(dir, name);
    const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });

    beforeAll(async () => {
      for (const ca of ['ca', 'other-ca']) {
        openssl(
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '2',
          '-subj',
          `/CN=test ${ca}`,
          '-keyout',
          file(`${ca}.key`),
          '-out',
          file(`${ca}.pem`),
        );
      }
      writeFileSync(file('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
      openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', file('server.key'), '-out', file('server.csr'));
      openssl(
        'x509',
        '-req',
        '-in',
        file('server.csr'),
        '-CA',
        file('ca.pem'),
        '-CAkey',
        file('ca.key'),
        '-CAcreateserial',
        '-days',
        '2',
        '-out',
        file('server.pem'),
        '-extfile',
        file('server.ext'),
      );
      cluster = await startPgCluster({ ssl: { cert: file('server.pem'), key: file('server.key') } });
    });
    afterAll(async () => {
      await cluster?.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    it('connects with verification on and the session is encrypted', async () => {
      const client = new pg.Client({ connectionString: storeConnectionString(cluster.url, file('ca.pem')) });
      await client.connect();
      try {
        const row = await client.query<{ ssl: boolean }>('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
        expect(row.rows[0].ssl).toBe(true);
      } finally {
        await client.end();
      }
    });

    it('refuses to start with a CA that did not sign the server certificate, naming pipeline.store.ca-file', async () => {
      const config = loadConfig(
        {},
        {
          'pipeline.store.url': cluster.url,
          'pipeline.store.ca-file': file('other-ca.pem'),
          'pipeline.temporal.address': inject('temporalAddress'),
          'pipeline.auth.tokens': TEST_TOKENS,
          // Port 0: the default 8080 may be held by anything else on the machine (it was, once, by
          // a developer's `npm start`), and the refusal must name the CA, not the port.
          'pipeline.server.port': 0,
        },
      );
      const error = await startService({ config, log: createLog({ level: 'fatal' }), pipelines: [] }).catch((err) => err);
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toMatch(/^pipeline\.store\.ca-file: the Postgres server's certificate does not verify/);
    });
  });
});
