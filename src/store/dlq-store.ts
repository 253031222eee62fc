/**
 * Read side of the Execution DLQ (provider `postgres`): an append-only table that
 * re-drive never reads destructively, deletes from or replays. Envelopes are written by
 * the terminal-failure commit in ExecutionStore.
 */
import type { TerminalReason } from '../spec-words';
import type { Db } from './db';
import type { ExecutionDlqRow } from './rows';

export interface DlqEnvelope {
  tenantId: string;
  executionId: string;
  executionKey: string | null;
  transitionKey: string;
  correlationId: string | null;
  resourceType: string | null;
  resourceName: string | null;
  transport: string;
  platform: string;
  terminalStatus: string;
  createdAtEpochMs: number;
  terminalReason: TerminalReason;
  errorCode: string;
  errorMessage: string;
  retryable: boolean;
  retriesObserved: number;
}

export interface DlqEntry {
  id: number;
  recordVersion: number;
  /** the execution's version has moved past the envelope's: it was re-driven or moved since */
  redriven: boolean;
  envelope: DlqEnvelope;
}

export class DlqStore {
  constructor(readonly db: Db) {}

  /** Newest first; `before` is the id cursor. Read-only. */
  async list(tenantId: string, options: { terminalReason?: TerminalReason; errorCode?: string; limit: number; before?: number }) {
    const params: unknown[] = [tenantId, options.limit + 1];
    let where = 'd.tenant_id = $1';
    for (const [column, value] of [['terminal_reason', options.terminalReason], ['error_code', options.errorCode]] as const) {
      if (value !== undefined) {
        params.push(value);
        where += ` AND d.${column} = $${params.length}`;
      }
    }
    if (options.before !== undefined) {
      params.push(options.before);
      where += ` AND d.id < $${params.length}`;
    }
    const result = await this.db.query<Pick<ExecutionDlqRow, 'id' | 'record_version' | 'envelope'> & { current_version: number | null }>(
      `SELECT d.id, d.record_version, d.envelope, r.version AS current_version
       FROM execution_dlq d LEFT JOIN execution_record r ON r.tenant_id = d.tenant_id AND r.execution_id = d.execution_id
       WHERE ${where} ORDER BY d.id DESC LIMIT $2`,
      params,
    );
    const entries: DlqEntry[] = result.rows.map((row) => ({
      id: Number(row.id),
      recordVersion: row.record_version,
      redriven: row.current_version != null && row.current_version > row.record_version,
      envelope: row.envelope as DlqEnvelope,
    }));
    return { entries: entries.slice(0, options.limit), more: entries.length > options.limit };
  }
}
