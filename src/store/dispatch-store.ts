/**
 * The dispatch outbox (`execution_dispatch`): one row per run to start, written in the
 * same statement as the record's admission (see ExecutionStore.create / admitRedrive).
 * A starter takes a lease on a PENDING row with a conditional UPDATE before it calls
 * Temporal, so two sweepers never start the same dispatch at once; the row turns
 * STARTED when a start is acknowledged (or when the run's first step says so).
 */
import { z } from 'zod';
import type { Db } from './db';
import { readRow, readRows } from './columns';
import { toRecord, type DispatchLease, type ExecutionRecord } from './execution-store';
import { ExecutionDispatchColumns, type DispatchSpec } from './rows';

export type { DispatchRow, DispatchSpec } from './rows';

/** A claim's row: the dispatch row's workflow_args beside the record's columns. */
const ClaimedSpec = z.object({ dispatch_spec: ExecutionDispatchColumns.shape.workflow_args });
const DueColumns = ExecutionDispatchColumns.pick({ tenant_id: true, execution_id: true, dispatch_id: true });

/** Names one dispatch row. */
export interface DispatchKey {
  tenantId: string;
  executionId: string;
  dispatchId: string;
}

export interface ClaimedDispatch {
  record: ExecutionRecord;
  /** the row's `workflow_args`: what the admission asked the run to do */
  spec: DispatchSpec;
}

export class DispatchStore {
  constructor(private readonly db: Db) {}

  /**
   * Takes the lease of a PENDING row whose lease is free (counting the attempt) and
   * returns it with the execution's record; null when the row is started, leased
   * elsewhere or absent.
   */
  async claim(key: DispatchKey & { lease: DispatchLease }): Promise<ClaimedDispatch | null> {
    const claimed = await this.db.query(
      `WITH lease AS (
         UPDATE execution_dispatch SET lease_owner = $4, lease_until = now() + ($5::integer * interval '1 millisecond'), attempts = attempts + 1
         WHERE tenant_id = $1 AND execution_id = $2 AND dispatch_id = $3 AND status = 'PENDING'
           AND (lease_until IS NULL OR lease_until < now())
         RETURNING workflow_args)
       SELECT lease.workflow_args AS dispatch_spec, r.* FROM lease JOIN execution_record r ON r.tenant_id = $1 AND r.execution_id = $2`,
      [key.tenantId, key.executionId, key.dispatchId, key.lease.owner, key.lease.ms],
    );
    if (claimed.rowCount === 0) return null;
    const row = claimed.rows[0];
    const spec = readRow('execution_dispatch', ClaimedSpec, row).dispatch_spec;
    return { record: toRecord(row), spec: spec ?? {} };
  }

  /** A start was acknowledged: the row is STARTED with its runId (a no-op once the run's first step marked it). */
  async markStarted(key: DispatchKey & { runId: string }): Promise<void> {
    await this.db.query(
      `UPDATE execution_dispatch SET status = 'STARTED', run_id = $4, started_at = now(), lease_owner = NULL, lease_until = NULL, last_error = NULL
       WHERE tenant_id = $1 AND execution_id = $2 AND dispatch_id = $3 AND status = 'PENDING'`,
      [key.tenantId, key.executionId, key.dispatchId, key.runId],
    );
  }

  /** A start failed: give the lease back (free again in `retryInMs`) and keep the error for operators. */
  async release(key: DispatchKey & { error: string; retryInMs: number }): Promise<void> {
    await this.db.query(
      `UPDATE execution_dispatch SET lease_owner = NULL, lease_until = now() + ($5::integer * interval '1 millisecond'), last_error = $4
       WHERE tenant_id = $1 AND execution_id = $2 AND dispatch_id = $3 AND status = 'PENDING'`,
      [key.tenantId, key.executionId, key.dispatchId, key.error, key.retryInMs],
    );
  }

  /** PENDING rows whose lease is free, oldest first. */
  async due(options: { limit: number }): Promise<DispatchKey[]> {
    const due = await this.db.query(
      `SELECT tenant_id, execution_id, dispatch_id FROM execution_dispatch
       WHERE status = 'PENDING' AND (lease_until IS NULL OR lease_until < now()) ORDER BY created_at LIMIT $1`,
      [options.limit],
    );
    return readRows('execution_dispatch', DueColumns, due.rows).map((row) => ({
      tenantId: row.tenant_id,
      executionId: row.execution_id,
      dispatchId: row.dispatch_id,
    }));
  }
}
