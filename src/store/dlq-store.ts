/**
 * Read side of the Execution DLQ (provider `postgres`): an append-only table that
 * re-drive never reads destructively, deletes from or replays. Envelopes are written by
 * the terminal-failure commit in ExecutionStore.
 */
import type { TerminalReason } from '../spec-words';
import { z } from 'zod';
import type { DlqEnvelope } from '../contract/dlq-envelope';
import type { Db } from './db';
import { num, readRow, readRows } from './columns';
import { DLQ_KEY, ExecutionDlqColumns } from './rows';

export type { DlqEnvelope };

/** An envelope leased for publication to the broker. */
export interface UnpublishedEnvelope {
  id: number;
  tenantId: string;
  transitionKey: string;
  envelope: DlqEnvelope;
}

export interface DlqEntry {
  id: number;
  recordVersion: number;
  /** the execution's version has moved past the envelope's: it was re-driven or moved since */
  redriven: boolean;
  envelope: DlqEnvelope;
}

/** A listed envelope, with the version its execution stands at now (null when retention deleted the record). */
const ListedColumns = ExecutionDlqColumns.pick({ id: true, record_version: true, envelope: true }).extend({ current_version: num.nullable() });
const LeasedColumns = ExecutionDlqColumns.pick({ id: true, tenant_id: true, transition_key: true, envelope: true });

export class DlqStore {
  constructor(readonly db: Db) {}

  /** Newest first; `before` is the id cursor. Read-only. */
  async list(tenantId: string, options: { terminalReason?: TerminalReason; errorCode?: string; limit: number; before?: number }) {
    const params: unknown[] = [tenantId, options.limit + 1];
    let where = 'd.tenant_id = $1';
    for (const [column, value] of [
      ['terminal_reason', options.terminalReason],
      ['error_code', options.errorCode],
    ] as const) {
      if (value !== undefined) {
        params.push(value);
        where += ` AND d.${column} = $${params.length}`;
      }
    }
    if (options.before !== undefined) {
      params.push(options.before);
      where += ` AND d.id < $${params.length}`;
    }
    const result = await this.db.query(
      `SELECT d.id, d.record_version, d.envelope, r.version AS current_version
       FROM execution_dlq d LEFT JOIN execution_record r ON r.tenant_id = d.tenant_id AND r.execution_id = d.execution_id
       WHERE ${where} ORDER BY d.id DESC LIMIT $2`,
      params,
    );
    const entries: DlqEntry[] = readRows('execution_dlq', ListedColumns, result.rows, DLQ_KEY).map((row) => ({
      id: row.id,
      recordVersion: row.record_version,
      redriven: row.current_version != null && row.current_version > row.record_version,
      envelope: row.envelope,
    }));
    return { entries: entries.slice(0, options.limit), more: entries.length > options.limit };
  }

  /**
   * The relay's side (broker providers): leases up to `batch` envelopes the broker has not
   * confirmed yet, oldest first, and counts the attempt. A lease that runs out frees the
   * envelope for the next pass (or another relay).
   */
  async leaseUnpublished(options: { batch: number; leaseMs: number }): Promise<UnpublishedEnvelope[]> {
    const due = await this.db.query(
      `UPDATE execution_dlq SET publish_lease_until = now() + ($2::integer * interval '1 millisecond'), publish_attempts = publish_attempts + 1
       WHERE id IN (SELECT id FROM execution_dlq WHERE published_at IS NULL AND (publish_lease_until IS NULL OR publish_lease_until < now())
                    ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
       RETURNING id, tenant_id, transition_key, envelope`,
      [options.batch, options.leaseMs],
    );
    return readRows('execution_dlq', LeasedColumns, due.rows, DLQ_KEY)
      .map((row) => ({ id: row.id, tenantId: row.tenant_id, transitionKey: row.transition_key, envelope: row.envelope }))
      .sort((a, b) => a.id - b.id);
  }

  /** The broker confirmed the envelope: it is never published again. */
  async markPublished(id: number): Promise<void> {
    await this.db.query(
      `UPDATE execution_dlq SET published_at = now(), publish_lease_until = NULL, publish_error = NULL WHERE id = $1 AND published_at IS NULL`,
      [id],
    );
  }

  /** A publish failed: keep why, and let the envelope be leased again after `retryInMs`. */
  async deferPublish(id: number, error: string, retryInMs: number): Promise<void> {
    await this.db.query(`UPDATE execution_dlq SET publish_lease_until = now() + ($3::integer * interval '1 millisecond'), publish_error = $2 WHERE id = $1`, [
      id,
      error,
      retryInMs,
    ]);
  }

  /** Envelopes the broker has not confirmed yet. */
  async countUnpublished(): Promise<number> {
    const result = await this.db.query('SELECT count(*)::int AS n FROM execution_dlq WHERE published_at IS NULL');
    return readRow('execution_dlq', z.object({ n: num }), result.rows[0]).n;
  }
}
