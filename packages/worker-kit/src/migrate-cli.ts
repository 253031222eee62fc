#!/usr/bin/env node
/**
 * `npx worker-kit-migrate`: creates or updates the kit's dedupe table in the database named by
 * DATABASE_URL (a `postgres://` URL), then exits 0. Idempotent: run it from every deploy.
 * `npx worker-kit-migrate print` prints the SQL instead and touches no database (a word, not a
 * `--flag`: npx would read a flag as its own). One JSON line per outcome.
 */
import pg from 'pg';
import { dedupeMigrationSql, DEDUPE_MIGRATION, ensureDedupeSchema } from './migration.js';

function line(entry: Record<string, unknown>): string {
  return `${JSON.stringify({ time: new Date().toISOString(), ...entry })}\n`;
}

async function main(args: string[]): Promise<number> {
  const usage = 'usage: worker-kit-migrate [print]\n  creates or updates transition_worker_dedupe in DATABASE_URL (idempotent); print: prints the SQL only\n';
  if (args[0] === 'help' || args[0] === '--help' || args[0] === '-h') {
    process.stdout.write(usage);
    return 0;
  }
  if (args.length > 1 || (args.length === 1 && args[0] !== 'print')) {
    process.stderr.write(line({ level: 'error', event: 'worker_kit_migration_failed', detail: `unknown argument ${args.at(-1)}: ${usage.split('\n')[0]}` }));
    return 2;
  }
  if (args[0] === 'print') {
    process.stdout.write(dedupeMigrationSql());
    return 0;
  }
  const url = process.env.DATABASE_URL;
  if (!url) {
    process.stderr.write(
      line({ level: 'error', event: 'worker_kit_migration_failed', detail: 'DATABASE_URL is not set: name the Postgres database the worker uses' }),
    );
    return 2;
  }
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await ensureDedupeSchema(client);
  } catch (err) {
    process.stderr.write(
      line({
        level: 'error',
        event: 'worker_kit_migration_failed',
        detail: `cannot migrate DATABASE_URL: ${err instanceof Error ? err.message : String(err)}`,
      }),
    );
    return 1;
  } finally {
    await client.end().catch(() => undefined);
  }
  process.stdout.write(line({ level: 'info', event: 'worker_kit_migration_applied', table: 'transition_worker_dedupe', statements: DEDUPE_MIGRATION.length }));
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
