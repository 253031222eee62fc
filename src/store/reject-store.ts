/**
 * Read side of the Item Reject Sink: metadata envelopes, newest first, read-only.
 * Re-drive of items is application-owned: the runtime keeps no payload to replay.
 */
import type { Db } from './db';
import { readRows } from './columns';
import { ItemRejectColumns } from './rows';

export interface RejectEnvelope {
  id: number;
  tenantId: string;
  executionId: string;
  transitionKey: string;
  step: string;
  itemKey: string | null;
  errorCode: string;
  reason: string;
  fingerprint: string;
  createdAtEpochMs: number;
}

export class RejectStore {
  constructor(readonly db: Db) {}

  async list(tenantId: string, options: { limit: number; before?: number }) {
    const params: unknown[] = [tenantId, options.limit + 1];
    let where = 'tenant_id = $1';
    if (options.before !== undefined) {
      params.push(options.before);
      where += ` AND id < $${params.length}`;
    }
    const result = await this.db.query(`SELECT * FROM item_reject WHERE ${where} ORDER BY id DESC LIMIT $2`, params);
    const items: RejectEnvelope[] = readRows('item_reject', ItemRejectColumns, result.rows).map((row) => ({
      id: row.id,
      tenantId: row.tenant_id,
      executionId: row.execution_id,
      transitionKey: row.transition_key,
      step: row.step,
      itemKey: row.item_key,
      errorCode: row.error_code,
      reason: row.reason,
      fingerprint: row.fingerprint,
      createdAtEpochMs: row.created_at.getTime(),
    }));
    return { items: items.slice(0, options.limit), more: items.length > options.limit };
  }
}
