/**
 * The migration the kit ships for its dedupe table, `transition_worker_dedupe`: idempotent
 * DDL, in order, each statement checking what is already there, so it is safe to run at every
 * start of every kit process and on a table an older kit created. Run it with
 * `ensureDedupeSchema(pool)` before serving, or from a deploy step with
 * `npx worker-kit-migrate` (DATABASE_URL); `npx worker-kit-migrate print` prints it as SQL
 * for a team that applies migrations with its own tool.
 */
import type { Queryable } from './ports.js';

export const DEDUPE_MIGRATION: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS transition_worker_dedupe (
    idempotency_key text CONSTRAINT transition_worker_dedupe_pkey PRIMARY KEY,
    state text NOT NULL,
    response_status integer,
    response_body jsonb,
    lease_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz)`,
  // NULL on rows written before keys were tenant-qualified.
  'ALTER TABLE transition_worker_dedupe ADD COLUMN IF NOT EXISTS tenant_id text',
  // Retention (purgeDedupe) reads only the rows it may delete.
  `CREATE INDEX IF NOT EXISTS transition_worker_dedupe_completed_index ON transition_worker_dedupe (completed_at) WHERE state = 'DONE'`,
  // Fencing token of the current claim; rows from before fencing start at 0.
  'ALTER TABLE transition_worker_dedupe ADD COLUMN IF NOT EXISTS fence bigint NOT NULL DEFAULT 0',
  // Open rows (IN_PROGRESS, RAN) by lease, for retention; replaces the IN_PROGRESS-only index.
  `CREATE INDEX IF NOT EXISTS transition_worker_dedupe_open_index ON transition_worker_dedupe (lease_until) WHERE state <> 'DONE'`,
  'DROP INDEX IF EXISTS transition_worker_dedupe_lease_index',
];

/** Runs the kit's migration (idempotent). */
export async function ensureDedupeSchema(db: Queryable): Promise<void> {
  for (const statement of DEDUPE_MIGRATION) await db.query(statement);
}

/** The migration as one SQL script, each statement ending with `;`. */
export function dedupeMigrationSql(): string {
  return `${DEDUPE_MIGRATION.map((statement) => `${statement};`).join('\n')}\n`;
}
