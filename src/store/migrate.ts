/**
 * Versioned migrations: ordered SQL files `YYYYMMDDHHMMSS_what.sql` in ./migrations,
 * each run whole (one multi-statement script) and applied together with its row in `schema_migration` in one transaction, under
 * an advisory lock so two processes starting at once do not race. A database that holds
 * migrations this build does not know (a newer build migrated it; this one is older) is
 * said in the log, once per start: the schema may not be what this code expects.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Log } from '../log';
import { packagePath } from '../paths';
import { z } from 'zod';
import type { Db } from './db';
import { readRows, text } from './columns';

const MIGRATIONS_DIR = packagePath('src', 'store', 'migrations');
const LOCK_ID = 727_274_001;

export interface Migration {
  version: string;
  name: string;
  sql: string;
}

export function listMigrations(): Migration[] {
  const migrations = readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{14}_[a-z0-9_]+\.sql$/.test(file))
    .sort()
    .map((file) => ({ version: file.slice(0, 14), name: file.slice(15, -4), sql: readFileSync(join(MIGRATIONS_DIR, file), 'utf8') }));
  // A version is applied once: a second file with the same timestamp would be skipped without a word.
  for (let i = 1; i < migrations.length; i++)
    if (migrations[i].version === migrations[i - 1].version)
      throw new Error(
        `migrations ${migrations[i - 1].version}_${migrations[i - 1].name}.sql and ${migrations[i].version}_${migrations[i].name}.sql share a version: give one a later timestamp`,
      );
  return migrations;
}

/**
 * Applies every migration not yet applied; returns the versions it applied. `migrations`
 * defaults to this build's files (tests hand in their own).
 */
export async function migrate(db: Db, log?: Log, migrations: Migration[] = listMigrations()): Promise<string[]> {
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migration (
    version text CONSTRAINT schema_migration_pkey PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`);
  const applied: string[] = [];
  for (const migration of migrations) {
    const done = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
      const seen = await tx.query('SELECT 1 FROM schema_migration WHERE version = $1', [migration.version]);
      if (seen.rowCount > 0) return false;
      // The file whole, as one script (simple-query protocol on pg, exec on PGlite), so every
      // valid SQL text, dollar-quoted function bodies included, runs as psql would run it.
      await tx.exec(migration.sql);
      await tx.query('INSERT INTO schema_migration (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      return true;
    });
    if (done) applied.push(migration.version);
  }
  const unknown = await unknownMigrations(db);
  if (unknown.length > 0) {
    log?.warn({
      event: 'schema_migrations_unknown',
      versions: unknown,
      detail:
        'the database has migrations this build does not know: a newer build migrated it. Run that build, or check its migrations are compatible with this one',
    });
  }
  return applied;
}

/** Versions recorded in the database that no migration file of this build has, oldest first. */
export async function unknownMigrations(db: Db): Promise<string[]> {
  const known = new Set(listMigrations().map((migration) => migration.version));
  const recorded = await db.query('SELECT version FROM schema_migration ORDER BY version');
  return readRows('schema_migration', z.object({ version: text }), recorded.rows)
    .map((row) => row.version)
    .filter((version) => !known.has(version));
}
