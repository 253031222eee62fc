/**
 * Read side of failure groups: the tenant's unredriven DLQ envelopes (the record still
 * stands at the version the envelope was written at) grouped by the group id stored with
 * each envelope, and the same selection for a bulk re-drive. Read-only.
 */
import { z } from 'zod';
import type { FailureSignature } from '../contract/failure-group';
import type { Db } from './db';
import { num, readRows, text, time } from './columns';
import { FailureSignatureJson } from './rows';

/** Which unredriven envelopes: every given field must match. */
export interface EnvelopeFilter {
  groupId?: string;
  terminalReason?: string;
  errorCode?: string;
  step?: string;
  /** ISO timestamps bounding the envelope's created_at: from inclusive, to exclusive */
  from?: string;
  to?: string;
}

export interface FailureGroupRow {
  group_id: string;
  signature: FailureSignature;
  count: number;
  first_seen: Date;
  last_seen: Date;
  /** envelopes per 10-minute bucket over the last hour, oldest first */
  buckets: number[];
}

/**
 * A group as both reads answer it: from execution_dlq's envelopes, or from dlq_group_day's
 * counters (whose signature is null on a day row written before the column: the group then
 * has none to show, and the read fails naming it).
 */
export const FailureGroupColumns = z.object({
  group_id: text,
  signature: FailureSignatureJson,
  count: num,
  first_seen: time,
  last_seen: time,
  buckets: z.array(num),
}) satisfies z.ZodType<FailureGroupRow>;

const BUCKETS = 6;
const BUCKET_MINUTES = 10;

/**
 * The WHERE clause (over `d` = execution_dlq joined to `r` = execution_record) that
 * selects unredriven envelopes of a tenant; pushes its parameters onto `params`, whose
 * first must be the tenant id.
 */
export function unredrivenWhere(filter: EnvelopeFilter, params: unknown[]): string {
  const push = (value: unknown) => `$${params.push(value)}`;
  let where = 'd.tenant_id = $1 AND r.version = d.record_version';
  if (filter.groupId !== undefined) where += ` AND d.group_id = ${push(filter.groupId)}`;
  if (filter.terminalReason !== undefined) where += ` AND d.terminal_reason = ${push(filter.terminalReason)}`;
  if (filter.errorCode !== undefined) where += ` AND d.error_code = ${push(filter.errorCode)}`;
  if (filter.step !== undefined) where += ` AND d.signature->>'step' = ${push(filter.step)}`;
  if (filter.from !== undefined) where += ` AND d.created_at >= ${push(filter.from)}::timestamptz`;
  if (filter.to !== undefined) where += ` AND d.created_at < ${push(filter.to)}::timestamptz`;
  return where;
}

export const UNREDRIVEN_FROM = `execution_dlq d JOIN execution_record r ON r.tenant_id = d.tenant_id AND r.execution_id = d.execution_id`;

export class FailureGroupStore {
  constructor(private readonly db: Db) {}

  /**
   * Groups, largest first, with count, first/last seen and the last hour in 10-minute
   * buckets. Filtered by terminalReason and errorCode (what the route offers), it reads the
   * per-day counts and first/last times the triggers keep (migrations 20261122130300 and
   * 20261126070000) and each group's last hour of envelopes: its cost follows the groups and
   * their last hour, not the DLQ's size or its envelopes per day. Other filters scan the envelopes.
   */
  async groups(tenantId: string, filter: EnvelopeFilter, limit: number): Promise<FailureGroupRow[]> {
    if (filter.groupId === undefined && filter.step === undefined && filter.from === undefined && filter.to === undefined) {
      return this.countedGroups(tenantId, filter, limit);
    }
    const params: unknown[] = [tenantId];
    const where = unredrivenWhere(filter, params);
    const buckets = Array.from({ length: BUCKETS }, (_, i) => {
      const older = (BUCKETS - i) * BUCKET_MINUTES;
      const newer = older - BUCKET_MINUTES;
      return `count(*) FILTER (WHERE d.created_at > now() - interval '${older} minutes' AND d.created_at <= now() - interval '${newer} minutes')::int`;
    });
    const result = await this.db.query(
      `SELECT d.group_id, (array_agg(d.signature ORDER BY d.id DESC))[1] AS signature, count(*)::int AS count,
         min(d.created_at) AS first_seen, max(d.created_at) AS last_seen, ARRAY[${buckets.join(', ')}] AS buckets
       FROM ${UNREDRIVEN_FROM} WHERE ${where}
       GROUP BY d.group_id ORDER BY count(*) DESC, d.group_id LIMIT $${params.push(limit)}`,
      params,
    );
    return readRows('execution_dlq', FailureGroupColumns, result.rows);
  }

  private async countedGroups(tenantId: string, filter: EnvelopeFilter, limit: number): Promise<FailureGroupRow[]> {
    const params: unknown[] = [tenantId];
    let where = 'tenant_id = $1 AND n > 0';
    if (filter.terminalReason !== undefined) where += ` AND terminal_reason = $${params.push(filter.terminalReason)}`;
    if (filter.errorCode !== undefined) where += ` AND error_code = $${params.push(filter.errorCode)}`;
    const unredriven = `FROM execution_dlq d WHERE d.tenant_id = $1 AND d.redriven_at IS NULL AND d.group_id = g.group_id`;
    const buckets = Array.from({ length: BUCKETS }, (_, i) => {
      const older = (BUCKETS - i) * BUCKET_MINUTES;
      const newer = older - BUCKET_MINUTES;
      return `count(*) FILTER (WHERE d.created_at > now() - interval '${older} minutes' AND d.created_at <= now() - interval '${newer} minutes')::int`;
    });
    const result = await this.db.query(
      `WITH g AS (
         SELECT group_id, sum(n)::int AS count, min(first_at) AS first_seen, max(last_at) AS last_seen,
           (array_agg(signature) FILTER (WHERE signature IS NOT NULL))[1] AS signature
         FROM dlq_group_day WHERE ${where}
         GROUP BY group_id ORDER BY sum(n) DESC, group_id LIMIT $${params.push(limit)})
       SELECT g.group_id, g.signature, g.count, g.first_seen, g.last_seen,
         (SELECT ARRAY[${buckets.join(', ')}] ${unredriven} AND d.created_at > now() - interval '${BUCKETS * BUCKET_MINUTES} minutes') AS buckets
       FROM g ORDER BY g.count DESC, g.group_id`,
      params,
    );
    return readRows('dlq_group_day', FailureGroupColumns, result.rows);
  }
}
