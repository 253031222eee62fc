/**
 * The checkpoint outbox (`checkpoint_outbox`): a producer's checkpoint lands here first,
 * keyed by (tenant, handoff key), and the publisher admits it as an execution. A starter
 * takes a lease on due PENDING rows with one conditional UPDATE (SKIP LOCKED), so two
 * publishers never admit the same checkpoint at once; a failed admission gives the lease
 * back with the next attempt's due time.
 */
import type { Db } from './db';
import { readRow, readRows } from './columns';
import { json } from './execution-store';
import { CheckpointOutboxColumns, type CheckpointOutboxRow } from './rows';
import type { CheckpointStatus } from '../spec-words';

export type { CheckpointStatus };

export interface NewCheckpoint {
  tenantId: string;
  handoffKey: string;
  pipeline: string;
  records: unknown[];
  executionId: string;
}

/** A checkpoint leased for admission. */
export type DueCheckpoint = Pick<CheckpointOutboxRow, 'tenant_id' | 'handoff_key' | 'pipeline' | 'records' | 'execution_id' | 'attempts' | 'created_at'>;

const DueColumns = CheckpointOutboxColumns.pick({
  tenant_id: true,
  handoff_key: true,
  pipeline: true,
  records: true,
  execution_id: true,
  attempts: true,
  created_at: true,
});

export interface CheckpointKey {
  tenantId: string;
  handoffKey: string;
}

export class CheckpointStore {
  constructor(private readonly db: Db) {}

  /** Accepts a checkpoint; false when its handoff key is already in the outbox (nothing changes). */
  async insert(checkpoint: NewCheckpoint): Promise<boolean> {
    const inserted = await this.db.query(
      `INSERT INTO checkpoint_outbox (tenant_id, handoff_key, pipeline, records, record_count, execution_id)
       VALUES ($1, $2, $3, $4::jsonb, $5, $6) ON CONFLICT DO NOTHING RETURNING status`,
      [checkpoint.tenantId, checkpoint.handoffKey, checkpoint.pipeline, json(checkpoint.records), checkpoint.records.length, checkpoint.executionId],
    );
    return inserted.rowCount > 0;
  }

  async status(key: CheckpointKey): Promise<CheckpointStatus | null> {
    const result = await this.db.query('SELECT status FROM checkpoint_outbox WHERE tenant_id = $1 AND handoff_key = $2', [key.tenantId, key.handoffKey]);
    return result.rows[0] === undefined ? null : readRow('checkpoint_outbox', CheckpointOutboxColumns.pick({ status: true }), result.rows[0]).status;
  }

  /** Leases up to `batch` due PENDING checkpoints (oldest first) and counts the attempt. */
  async leaseDue(options: { owner: string; leaseMs: number; batch: number }): Promise<DueCheckpoint[]> {
    const due = await this.db.query(
      `UPDATE checkpoint_outbox SET lease_owner = $1, lease_until = now() + ($2::integer * interval '1 millisecond'), attempts = attempts + 1
       WHERE (tenant_id, handoff_key) IN (
         SELECT tenant_id, handoff_key FROM checkpoint_outbox
         WHERE status = 'PENDING' AND next_attempt_at <= now() AND (lease_until IS NULL OR lease_until < now())
         ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
       RETURNING tenant_id, handoff_key, pipeline, records, execution_id, attempts, created_at`,
      [options.owner, options.leaseMs, options.batch],
    );
    return readRows('checkpoint_outbox', DueColumns, due.rows);
  }

  /** The checkpoint's run has started: ADMITTED, lease and last error cleared. */
  async markAdmitted(key: CheckpointKey): Promise<void> {
    await this.db.query(
      `UPDATE checkpoint_outbox SET status = 'ADMITTED', admitted_at = now(), lease_owner = NULL, lease_until = NULL, last_error = NULL WHERE tenant_id = $1 AND handoff_key = $2`,
      [key.tenantId, key.handoffKey],
    );
  }

  /** The admission failed: free the lease and make the checkpoint due again in `retryInMs`, keeping why. */
  async defer(key: CheckpointKey & { retryInMs: number; error: string }): Promise<void> {
    await this.db.query(
      `UPDATE checkpoint_outbox SET next_attempt_at = now() + ($3::integer * interval '1 millisecond'), lease_owner = NULL, lease_until = NULL, last_error = $4
       WHERE tenant_id = $1 AND handoff_key = $2`,
      [key.tenantId, key.handoffKey, key.retryInMs, key.error],
    );
  }
}
