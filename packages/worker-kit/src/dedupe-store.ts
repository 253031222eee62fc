/**
 * The worker kit's dedupe table: one row per tenant-qualified idempotency key
 * (`{tenantId}/{executionId}:{stepIndex}:{attempt}`). A delivery claims the key
 * (IN_PROGRESS, with a lease and a fencing token); once the handler has returned the row is
 * marked RAN, then its outcome is stored (DONE) and replayed to every later delivery of the
 * same key. A claim whose lease expired while IN_PROGRESS is *abandoned*: its holder died
 * mid-handler, or after its handler returned while the database was down (nothing could be
 * written). The handler may have made its effect, so by default an abandoned claim is never
 * taken over: deliveries answer "in progress" (the service parks the execution
 * REMOTE_OUTCOME_UNKNOWN once its in-progress budget runs out) and the lookup says
 * ABANDONED. Only a kit configured to run abandoned claims again (a handler that passes the
 * key to everything it calls) takes it over, which bumps the fencing token: every later write
 * of the old holder (lease renewal, RAN, outcome, release) is conditional on its token and
 * changes nothing. A RAN row is never taken over.
 *
 * Rows written before keys were tenant-qualified ("legacy" rows: `tenant_id` NULL, key
 * `executionId:stepIndex:attempt`) cannot say which tenant they belong to. A legacy
 * row for the same transition identity blocks the handler for every tenant, and is
 * answered with a fixed rejection that carries nothing of the stored outcome
 * (docs/decisions.md, "Tenant-qualified idempotency keys").
 */
import type { Queryable } from './ports.js';
import { parseIdempotencyKey } from './protocol.js';

export interface StoredResponse {
  status: number;
  body: unknown;
}

/** IN_PROGRESS: claimed, handler running; RAN: the handler returned, its outcome not stored yet; DONE: outcome stored. */
export type DedupeState = 'IN_PROGRESS' | 'RAN' | 'DONE';

/**
 * What the disposition lookup reports: a stored state, or ABANDONED for an IN_PROGRESS claim
 * whose lease ran out (its holder died, or cannot reach the database to renew it; the handler
 * may or may not have made its effect).
 */
export type RecordedState = DedupeState | 'ABANDONED';

/**
 * `fence`: the claim's fencing token, a counter per identity that every takeover bumps.
 * `abandoned`: not claimed because the claim's lease ran out and takeovers are off.
 */
export type Claim = { claimed: true; fence: number } | { claimed: false; state: DedupeState; response: StoredResponse | null; abandoned: boolean };

/** What a claim may do with an abandoned claim (IN_PROGRESS, lease run out). */
export type AbandonedClaims = 'park' | 'run-again';

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
  state: DedupeState;
  response_status: number | null;
  response_body: unknown;
  completed_at: Date | string | null;
}

/**
 * The kit's migration (./migration.ts): idempotent DDL, safe to run at every start of every kit
 * process. Run it once before serving, or from a deploy step with `npx worker-kit-migrate`.
 */
export { ensureDedupeSchema } from './migration.js';

/**
 * Retention of the dedupe table: deletes one batch (at most `limit`) of rows completed,
 * or left open (a handler abandoned, or RAN with its outcome never stored: lease expired), longer than `keepMs` ago, and returns how many
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
       abandoned AS (SELECT idempotency_key FROM transition_worker_dedupe WHERE state <> 'DONE' AND lease_until < ${cutoff}
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

  /**
   * `key` is tenant-qualified. No claim is made while a legacy row holds the same transition
   * identity. An abandoned claim (IN_PROGRESS, lease run out) is taken over only with
   * `abandoned: 'run-again'`; with 'park' it is reported (`abandoned: true`) and left alone.
   */
  async claim(key: string, leaseMs: number, abandoned: AbandonedClaims = 'park'): Promise<Claim> {
    const { tenantId, transitionKey } = split(key);
    const result = await this.db.query<
      Pick<DedupeRow, 'state' | 'response_status' | 'response_body'> & {
        claimed: boolean;
        legacy: boolean;
        fence: string | number | null;
        expired: boolean | null;
      }
    >(
      `WITH legacy AS (SELECT 1 FROM transition_worker_dedupe WHERE idempotency_key = $3),
       claimed AS (
         INSERT INTO transition_worker_dedupe (idempotency_key, tenant_id, state, lease_until, fence)
         SELECT $1, $4, 'IN_PROGRESS', now() + ($2::integer * interval '1 millisecond'), 1 WHERE NOT EXISTS (SELECT 1 FROM legacy)
         ON CONFLICT (idempotency_key) DO UPDATE SET lease_until = EXCLUDED.lease_until, fence = transition_worker_dedupe.fence + 1
           WHERE $5::boolean AND transition_worker_dedupe.state = 'IN_PROGRESS' AND transition_worker_dedupe.lease_until < now()
         RETURNING fence)
       SELECT EXISTS (SELECT 1 FROM claimed) AS claimed, (SELECT fence FROM claimed) AS fence, EXISTS (SELECT 1 FROM legacy) AS legacy,
              d.state, d.response_status, d.response_body, d.lease_until < now() AS expired
       FROM (SELECT 1) AS one LEFT JOIN transition_worker_dedupe d ON d.idempotency_key = $1 AND NOT EXISTS (SELECT 1 FROM claimed)`,
      [key, leaseMs, transitionKey, tenantId, abandoned === 'run-again'],
    );
    const row = result.rows[0];
    if (row.claimed) return { claimed: true, fence: Number(row.fence) };
    if (row.legacy) return { claimed: false, state: 'DONE', response: LEGACY_ROW_RESPONSE, abandoned: false };
    return {
      claimed: false,
      state: row.state,
      response: row.state === 'DONE' ? { status: row.response_status!, body: row.response_body } : null,
      abandoned: row.state === 'IN_PROGRESS' && row.expired === true,
    };
  }

  /**
   * The handler of the claim `fence` has returned: from here on no delivery takes the claim
   * over, even when this process dies before the outcome is stored. Idempotent. False: fenced
   * out (a later claim holds the identity), nothing changed.
   */
  async markRan(key: string, fence: number): Promise<boolean> {
    const result = await this.db.query(
      `UPDATE transition_worker_dedupe SET state = 'RAN' WHERE idempotency_key = $1 AND fence = $2 AND state IN ('IN_PROGRESS', 'RAN') RETURNING 1`,
      [key, fence],
    );
    return result.rows.length > 0;
  }

  /** Stores the outcome of the claim `fence`. False: fenced out, nothing changed. */
  async complete(key: string, fence: number, response: StoredResponse): Promise<boolean> {
    const result = await this.db.query(
      `UPDATE transition_worker_dedupe SET state = 'DONE', response_status = $2, response_body = $3::jsonb, completed_at = now(), lease_until = NULL
       WHERE idempotency_key = $1 AND fence = $4 AND state IN ('IN_PROGRESS', 'RAN') RETURNING 1`,
      [key, response.status, JSON.stringify(response.body ?? null), fence],
    );
    return result.rows.length > 0;
  }

  /** Extends the lease of the claim `fence` (its handler is running, or its outcome is still being stored). False: the claim was lost. */
  async renew(key: string, fence: number, leaseMs: number): Promise<boolean> {
    const result = await this.db.query(
      `UPDATE transition_worker_dedupe SET lease_until = now() + ($2::integer * interval '1 millisecond')
       WHERE idempotency_key = $1 AND fence = $3 AND state IN ('IN_PROGRESS', 'RAN') RETURNING 1`,
      [key, leaseMs, fence],
    );
    return result.rows.length > 0;
  }

  /** A retryable failure: forget the claim `fence` so the next delivery runs the handler again. */
  async release(key: string, fence: number): Promise<void> {
    await this.db.query(`DELETE FROM transition_worker_dedupe WHERE idempotency_key = $1 AND fence = $2 AND state = 'IN_PROGRESS'`, [key, fence]);
  }

  /**
   * Whether the transition of a tenant-qualified key was recorded. A legacy row of the
   * same identity counts as recorded (`legacy: true`): it may be this tenant's, and
   * "recorded" is the answer that keeps an operator from re-running an effect.
   */
  async lookup(key: string): Promise<{ state: RecordedState; completedAt: string | null; legacy: boolean } | null> {
    const { transitionKey } = split(key);
    const result = await this.db.query<Omit<DedupeRow, 'state'> & { state: RecordedState }>(
      `SELECT idempotency_key, completed_at,
              CASE WHEN state = 'IN_PROGRESS' AND lease_until < now() THEN 'ABANDONED' ELSE state END AS state
       FROM transition_worker_dedupe WHERE idempotency_key IN ($1, $2) ORDER BY idempotency_key = $1 DESC LIMIT 1`,
      [key, transitionKey],
    );
    const row = result.rows[0];
    if (!row) return null;
    const completedAt = row.completed_at instanceof Date ? row.completed_at.toISOString() : row.completed_at;
    return { state: row.state, completedAt, legacy: row.idempotency_key !== key };
  }
}
