/**
 * The worker kit's dedupe table: one row per transition identity. A delivery claims the
 * key (IN_PROGRESS, with a lease); the handler's outcome is stored (DONE) and replayed to
 * every later delivery of the same key. A claim whose lease expired (the worker died
 * mid-handler) can be taken over.
 */
import type { Queryable } from '../store/db';

export interface StoredResponse {
  status: number;
  body: unknown;
}

export type Claim = { claimed: true } | { claimed: false; state: 'IN_PROGRESS' | 'DONE'; response: StoredResponse | null };

export async function ensureDedupeSchema(db: Queryable): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS transition_worker_dedupe (
    idempotency_key text CONSTRAINT transition_worker_dedupe_pkey PRIMARY KEY,
    state text NOT NULL,
    response_status integer,
    response_body jsonb,
    lease_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz)`);
}

export class DedupeStore {
  constructor(private readonly db: Queryable) {}

  async claim(key: string, leaseMs: number): Promise<Claim> {
    const result = await this.db.query<Record<string, any>>(
      `WITH claimed AS (
         INSERT INTO transition_worker_dedupe (idempotency_key, state, lease_until)
         VALUES ($1, 'IN_PROGRESS', now() + ($2::integer * interval '1 millisecond'))
         ON CONFLICT (idempotency_key) DO UPDATE SET lease_until = EXCLUDED.lease_until
           WHERE transition_worker_dedupe.state = 'IN_PROGRESS' AND transition_worker_dedupe.lease_until < now()
         RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, d.state, d.response_status, d.response_body
       FROM (SELECT 1) AS one LEFT JOIN transition_worker_dedupe d ON d.idempotency_key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [key, leaseMs],
    );
    const row = result.rows[0];
    if (row.claimed) return { claimed: true };
    return { claimed: false, state: row.state, response: row.state === 'DONE' ? { status: row.response_status, body: row.response_body } : null };
  }

  async complete(key: string, response: StoredResponse): Promise<void> {
    await this.db.query(
      `UPDATE transition_worker_dedupe SET state = 'DONE', response_status = $2, response_body = $3::jsonb, completed_at = now(), lease_until = NULL
       WHERE idempotency_key = $1`,
      [key, response.status, JSON.stringify(response.body ?? null)],
    );
  }

  /** A retryable failure: forget the claim so the next delivery runs the handler again. */
  async release(key: string): Promise<void> {
    await this.db.query(`DELETE FROM transition_worker_dedupe WHERE idempotency_key = $1 AND state = 'IN_PROGRESS'`, [key]);
  }

  async lookup(key: string): Promise<{ state: string; completedAt: string | null } | null> {
    const result = await this.db.query<Record<string, any>>('SELECT state, completed_at FROM transition_worker_dedupe WHERE idempotency_key = $1', [key]);
    if (!result.rowCount) return null;
    const completedAt = result.rows[0].completed_at;
    return { state: result.rows[0].state, completedAt: completedAt instanceof Date ? completedAt.toISOString() : completedAt };
  }
}
