/**
 * Postgres TLS: pipeline.store.ca-file turns verification on in the connection string pg
 * uses (sslrootcert + verify-full). Against this machine's Postgres, which has ssl=off, the
 * client then insists on TLS and is refused, which proves TLS is asked for, not skipped.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
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
});
