/**
 * Retention: each method deletes one bounded batch of rows past their retention and
 * returns what it deleted. Candidates are read through an index that holds only
 * deletable rows, oldest first, and locked with `FOR UPDATE SKIP LOCKED`: several
 * processes deleting at once take disjoint batches (none waits on or deletes another's
 * rows), and a batch that finds nothing deletes nothing (idempotent). What is never
 * deleted: a record that is not SUCCEEDED (FAILED and REMOTE_OUTCOME_UNKNOWN records can
 * always be re-driven), an envelope of an execution still FAILED, an audit row while an
 * envelope it explains is kept, a dispatch row not started, a checkpoint not admitted.
 */
import type { Db } from './db';

/** Row counts one batch deleted, by table. */
export type Deleted = Record<string, number>;

interface CountsRow {
  [table: string]: number;
}

/** `now() - $1 ms`: the cutoff of a retention period given in milliseconds. */
const CUTOFF = `now() - ($1::bigint * interval '1 millisecond')`;

export class RetentionStore {
  constructor(readonly db: Db) {}

  /** SUCCEEDED records older than the cutoff, with their Command effects and attempt log. */
  succeededExecutions(retentionMs: number, limit: number): Promise<Deleted> {
    return this.counts(
      `WITH doomed AS (
         SELECT tenant_id, execution_id FROM execution_record
         WHERE status = 'SUCCEEDED' AND created_at < ${CUTOFF} AND updated_at < ${CUTOFF}
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       effects AS (DELETE FROM command_effect e USING doomed d WHERE e.tenant_id = d.tenant_id AND e.execution_id = d.execution_id RETURNING 1),
       attempts AS (DELETE FROM execution_attempt a USING doomed d WHERE a.tenant_id = d.tenant_id AND a.execution_id = d.execution_id RETURNING 1),
       records AS (DELETE FROM execution_record r USING doomed d WHERE r.tenant_id = d.tenant_id AND r.execution_id = d.execution_id RETURNING 1)
       SELECT (SELECT count(*) FROM records) AS execution_record, (SELECT count(*) FROM effects) AS command_effect,
              (SELECT count(*) FROM attempts) AS execution_attempt`,
      [retentionMs, limit],
    );
  }

  /** Envelopes whose execution left FAILED (was re-driven) longer ago than the cutoff. */
  redrivenEnvelopes(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('execution_dlq', ['id'], `redriven_at IS NOT NULL AND redriven_at < ${CUTOFF} ORDER BY redriven_at`, retentionMs, limit);
  }

  /** Audit rows older than the cutoff, unless an envelope they explain is still kept. */
  redriveAudit(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey(
      'redrive_audit',
      ['tenant_id', 'execution_id', 'redrive_id'],
      `created_at < ${CUTOFF} AND NOT EXISTS (SELECT 1 FROM execution_dlq d
         WHERE d.tenant_id = redrive_audit.tenant_id AND d.execution_id = redrive_audit.execution_id AND d.record_version <= redrive_audit.from_version)
       ORDER BY created_at`,
      retentionMs,
      limit,
    );
  }

  itemRejects(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('item_reject', ['id'], `created_at < ${CUTOFF} ORDER BY created_at`, retentionMs, limit);
  }

  admittedCheckpoints(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey(
      'checkpoint_outbox',
      ['tenant_id', 'handoff_key'],
      `status = 'ADMITTED' AND admitted_at < ${CUTOFF} ORDER BY admitted_at`,
      retentionMs,
      limit,
    );
  }

  startedDispatches(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey(
      'execution_dispatch',
      ['tenant_id', 'execution_id', 'dispatch_id'],
      `status = 'STARTED' AND started_at < ${CUTOFF} ORDER BY started_at`,
      retentionMs,
      limit,
    );
  }

  /** Per-minute signal counts older than any triage window reads. */
  signalMinutes(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey(
      'signal_minute',
      ['tenant_id', 'signal', 'minute', 'key', 'detail', 'shard'],
      `minute < ${CUTOFF} ORDER BY minute`,
      retentionMs,
      limit,
    );
  }

  /** Items of bulk re-drive jobs that finished (COMPLETED or ABORTED) longer ago than the cutoff. */
  finishedJobItems(retentionMs: number, limit: number): Promise<Deleted> {
    return this.counts(
      `WITH doomed AS (
         SELECT i.tenant_id, i.job_id, i.execution_id FROM redrive_job_item i
         JOIN redrive_job j ON j.tenant_id = i.tenant_id AND j.job_id = i.job_id
         WHERE j.status IN ('COMPLETED', 'ABORTED', 'FAILED') AND j.finished_at < ${CUTOFF}
         LIMIT $2 FOR UPDATE OF i SKIP LOCKED),
       gone AS (DELETE FROM redrive_job_item t USING doomed d WHERE t.tenant_id = d.tenant_id AND t.job_id = d.job_id AND t.execution_id = d.execution_id RETURNING 1)
       SELECT count(*) AS redrive_job_item FROM gone`,
      [retentionMs, limit],
    );
  }

  /** Finished bulk re-drive jobs past the cutoff whose items are gone. */
  finishedJobs(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey(
      'redrive_job',
      ['tenant_id', 'job_id'],
      `status IN ('COMPLETED', 'ABORTED', 'FAILED') AND finished_at < ${CUTOFF}
       AND NOT EXISTS (SELECT 1 FROM redrive_job_item i WHERE i.tenant_id = redrive_job.tenant_id AND i.job_id = redrive_job.job_id)
       ORDER BY finished_at`,
      retentionMs,
      limit,
    );
  }

  /**
   * Rolls per-minute signal counts older than `olderThanMs` (rounded down to the hour) into
   * one row per hour (shard -1), so a long triage window reads hours, not minutes × keys ×
   * shards. Windows up to an hour (and the hour before them) stay minute-exact.
   */
  async compactSignalMinutes(olderThanMs: number, limit: number): Promise<Deleted> {
    return this.counts(
      `WITH doomed AS (
         SELECT tenant_id, signal, minute, key, detail, shard FROM signal_minute
         WHERE shard >= 0 AND minute < date_trunc('hour', ${CUTOFF}) ORDER BY minute LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (
         DELETE FROM signal_minute t USING doomed d
         WHERE t.tenant_id = d.tenant_id AND t.signal = d.signal AND t.minute = d.minute AND t.key = d.key AND t.detail = d.detail AND t.shard = d.shard
         RETURNING t.*),
       rolled AS (
         INSERT INTO signal_minute (tenant_id, signal, minute, key, detail, shard, n)
         SELECT tenant_id, signal, date_trunc('hour', minute), key, detail, -1, sum(n) FROM gone GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5
         ON CONFLICT (tenant_id, signal, minute, key, detail, shard) DO UPDATE SET n = signal_minute.n + EXCLUDED.n
         RETURNING 1)
       SELECT (SELECT count(*) FROM gone) AS signal_minute_compacted WHERE (SELECT count(*) FROM rolled) >= 0`,
      [olderThanMs, limit],
    );
  }

  /** Failure-group day counts that reached zero (every envelope of that day re-driven) more than `retentionMs` ago. */
  emptyGroupDays(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('dlq_group_day', ['tenant_id', 'group_id', 'day'], `n = 0 AND day < ${CUTOFF}`, retentionMs, limit);
  }

  /** One statement: lock a batch of candidates (skipping rows another deleter holds), delete them by key. */
  private deleteByKey(table: string, key: string[], where: string, retentionMs: number, limit: number): Promise<Deleted> {
    const join = key.map((column) => `t.${column} = doomed.${column}`).join(' AND ');
    return this.counts(
      `WITH doomed AS (SELECT ${key.join(', ')} FROM ${table} WHERE ${where} LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM ${table} t USING doomed WHERE ${join} RETURNING 1)
       SELECT count(*) AS ${table} FROM gone`,
      [retentionMs, limit],
    );
  }

  private async counts(sql: string, params: unknown[]): Promise<Deleted> {
    const row = (await this.db.query<CountsRow>(sql, params)).rows[0] ?? {};
    return Object.fromEntries(Object.entries(row).map(([table, n]) => [table, Number(n)]));
  }
}
