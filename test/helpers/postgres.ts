/**
 * A fresh database per test file on the real Postgres server (127.0.0.1:5432 unless
 * TEST_DATABASE_URL says otherwise), migrated, dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createPgDb, type Db } from '../../src/store/db';
import { migrate } from '../../src/store/migrate';

export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  db: Db;
  drop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${name}`;
  return parsed.toString();
}

/** `settings` become database defaults (ALTER DATABASE … SET), seen by every new connection. */
export async function createTestDatabase(settings: Record<string, string> = {}): Promise<TestDatabase> {
  const name = `pipeline_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  for (const [key, value] of Object.entries(settings)) {
    if (!/^[a-z_]+$/.test(key) || !/^[a-z0-9_]+$/.test(value)) throw new Error(`bad setting ${key}=${value}`);
    await admin.query(`ALTER DATABASE ${name} SET ${key} = ${value}`);
  }
  await admin.end();
  const url = withDatabase(ADMIN_URL, name);
  // Idle connections close after a second, so suites side by side (CI pairs and a third run)
  // hold fewer of the server's max_connections (100 here).
  const db = createPgDb(url, { idleTimeoutMs: 1000 });
  await migrate(db);
  return {
    url,
    db,
    async drop() {
      await db.close();
      const client = new pg.Client({ connectionString: ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}
