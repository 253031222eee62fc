/**
 * The worker kit's dedupe table: one row per tenant-qualified idempotency key
 * (`{tenantId}/{executionId}:{stepIndex}:{attempt}`). A delivery claims the key
 * (IN_PROGRESS, with a lease); the handler's outcome is stored (DONE) and replayed to
 * every later delivery of the same key. A claim whose lease expired (the worker died
 * mid-handler) can be taken over.
 *
 * Rows written before keys were tenant-qualified ("legacy" rows: `tenant_id` NULL, key
 * `executionId:stepIndex:attempt`) cannot say which tenant they belong to. A legacy
 * row for the same transition identity blocks the handler for every tenant, and is
 * answered with a fixed rejection that carries nothing of the stored outcome
 * (docs/decisions.md, "Tenant-qualified idempotency keys").
 */
import { parseIdempotencyKey } from '../ids';
import type { Queryable } from '../store/db';

export interface StoredResponse {
  status: number;
  body: unknown;
}

export type Claim = { claimed: true } | { claimed: false; state: 'IN_PROGRESS' | 'DONE'; response: StoredResponse | null };

/** What a delivery whose transition has a legacy row gets, whichever tenant asks. */
export const LEGACY_ROW_RESPONSE: StoredResponse = {
  status: 409,
  body: {
    code: 'LEGACY_TRANSITION_RECORDED',
    error:
      'this transition identity was recorded before idempotency keys were tenant-qualified; the handler is not run again and the stored outcome is withheld',
  },
};

interface DedupeRow {
  idempotency_key: string;
  tenant_id: string | null;
  state: 'IN_PROGRESS' | 'DONE';
  response_status: number | null;
  response_body: unknown;
  completed_at: Date | string | null;
}

export async function ensureDedupeSchema(db: Queryable): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS transition_worker_dedupe (
    idempotency_key text CONSTRAINT transition_worker_dedupe_pkey PRIMARY KEY,
    state text NOT NULL,
    response_status integer,
    response_body jsonb,
    lease_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz)`);
  // NULL on rows written before keys were tenant-qualified.
  await db.query('ALTER TABLE transition_worker_dedupe ADD COLUMN IF NOT EXISTS tenant_id text');
  // Retention (purgeDedupe) reads only the rows it may delete.
  await db.query(`CREATE INDEX IF NOT EXISTS transition_worker_dedupe_completed_index ON transition_worker_dedupe (completed_at) WHERE state = 'DONE'`);
  await db.query(`CREATE INDEX IF NOT EXISTS transition_worker_dedupe_lease_index ON transition_worker_dedupe (lease_until) WHERE state = 'IN_PROGRESS'`);
}

/**
 * Retention of the dedupe table: deletes one batch (at most `limit`) of rows completed,
 * or abandoned mid-handler (lease expired), longer than `keepMs` ago, and returns how many
 * went; 0 when the table does not exist in this database. `keepMs` must exceed the longest
 * a redelivery of one transition can still arrive (the orchestrator's retry budget times
 * its step deadline, docs/runbook.md "Sizing retention") and the time operators take to
 * settle a REMOTE_OUTCOME_UNKNOWN execution, whose evidence is this row. Rows are locked
 * with SKIP LOCKED: several processes may purge at once.
 */
export async function purgeDedupe(db: Queryable, keepMs: number, limit: number): Promise<number> {
  const cutoff = `now() - ($1::bigint * interval '1 millisecond')`;
  try {
    const result = await db.query<{ n: number }>(
      `WITH done AS (SELECT idempotency_key FROM transition_worker_dedupe WHERE state = 'DONE' AND completed_at < ${cutoff}
                     ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       abandoned AS (SELECT idempotency_key FROM transition_worker_dedupe WHERE state = 'IN_PROGRESS' AND lease_until < ${cutoff}
                     ORDER BY lease_until LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM transition_worker_dedupe t WHERE t.idempotency_key IN (SELECT idempotency_key FROM done UNION ALL SELECT idempotency_key FROM abandoned) RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [keepMs, limit],
    );
    return Number(result.rows[0]?.n ?? 0);
  } catch (err) {
    if ((err as { code?: string }).code === '42P01') return 0;
    throw err;
  }
}

function split(key: string) {
  const parsed = parseIdempotencyKey(key);
  if (!parsed) throw new TypeError('the dedupe store takes tenant-qualified idempotency keys only');
  return parsed;
}

export class DedupeStore {
  constructor(private readonly db: Queryable) {}

  /** `key` is tenant-qualified. No claim is made while a legacy row holds the same transition identity. */
  async claim(key: string, leaseMs: number): Promise<Claim> {
    const { tenantId, transitionKey } = split(key);
    const result = await this.db.query<Pick<DedupeRow, 'state' | 'response_status' | 'response_body'> & { claimed: boolean; legacy: boolean }>(
      `WITH legacy AS (SELECT 1 FROM transition_worker_dedupe WHERE idempotency_key = $3),
       claimed AS (
         INSERT INTO transition_worker_dedupe (idempotency_key, tenant_id, state, lease_until)
         SELECT $1, $4, 'IN_PROGRESS', now() + ($2::integer * interval '1 millisecond') WHERE NOT EXISTS (SELECT 1 FROM legacy)
         ON CONFLICT (idempotency_key) DO UPDATE SET lease_until = EXCLUDED.lease_until
           WHERE transition_worker_dedupe.state = 'IN_PROGRESS' AND transition_worker_dedupe.lease_until < now()
         RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, EXISTS (SELECT 1 FROM legacy) AS legacy, d.state, d.response_status, d.response_body
       FROM (SELECT 1) AS one LEFT JOIN transition_worker_dedupe d ON d.idempotency_key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [key, leaseMs, transitionKey, tenantId],
    );
    const row = result.rows[0];
    if (row.claimed) return { claimed: true };
    if (row.legacy) return { claimed: false, state: 'DONE', response: LEGACY_ROW_RESPONSE };
    return { claimed: false, state: row.state, response: row.state === 'DONE' ? { status: row.response_status!, body: row.response_body } : null };
  }

  async complete(key: string, response: StoredResponse): Promise<void> {
    await this.db.query(
      `UPDATE transition_worker_dedupe SET state = 'DONE', response_status = $2, response_body = $3::jsonb, completed_at = now(), lease_until = NULL
       WHERE idempotency_key = $1`,
      [key, response.status, JSON.stringify(response.body ?? null)],
    );
  }

  /** Extends a live claim's lease (its handler is running, or its outcome is still being stored). */
  async renew(key: string, leaseMs: number): Promise<void> {
    await this.db.query(
      `UPDATE transition_worker_dedupe SET lease_until = now() + ($2::integer * interval '1 millisecond') WHERE idempotency_key = $1 AND state = 'IN_PROGRESS'`,
      [key, leaseMs],
    );
  }

  /** A retryable failure: forget the claim so the next delivery runs the handler again. */
  async release(key: string): Promise<void> {
    await this.db.query(`DELETE FROM transition_worker_dedupe WHERE idempotency_key = $1 AND state = 'IN_PROGRESS'`, [key]);
  }

  /**
   * Whether the transition of a tenant-qualified key was recorded. A legacy row of the
   * same identity counts as recorded (`legacy: true`): it may be this tenant's, and
   * "recorded" is the answer that keeps an operator from re-running an effect.
   */
  async lookup(key: string): Promise<{ state: string; completedAt: string | null; legacy: boolean } | null> {
    const { transitionKey } = split(key);
    const result = await this.db.query<DedupeRow>(
      'SELECT idempotency_key, state, completed_at FROM transition_worker_dedupe WHERE idempotency_key IN ($1, $2) ORDER BY idempotency_key = $1 DESC LIMIT 1',
      [key, transitionKey],
    );
    const row = result.rows[0];
    if (!row) return null;
    const completedAt = row.completed_at instanceof Date ? row.completed_at.toISOString() : row.completed_at;
    return { state: row.state, completedAt, legacy: row.idempotency_key !== key };
  }
}
