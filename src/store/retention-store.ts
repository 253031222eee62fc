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
import { z } from 'zod';
import type { Db } from './db';
import { num, readRow } from './columns';

/** Row counts one batch deleted, by table. */
export type Deleted = Record<string, number>;

/** What a batch statement answers: the rows it deleted, by table (`count(*)`, a number or an int8 string). */
const CountsColumns = z.record(z.string(), num);

/** `now() - $1 ms`: the cutoff of a retention period given in milliseconds. */
const CUTOFF = `now() - ($1::bigint * interval '1 millisecond')`;

/**
 * What each kind may delete, as `FROM … WHERE …` over its candidates (with `$1` the retention
 * in milliseconds): the deleting statements and the backlog count read the same rows.
 */
const ELIGIBLE = {
  execution_record: `execution_record WHERE status = 'SUCCEEDED' AND created_at < ${CUTOFF} AND updated_at < ${CUTOFF}`,
  execution_dlq: `execution_dlq WHERE redriven_at IS NOT NULL AND redriven_at < ${CUTOFF}`,
  redrive_audit: `redrive_audit WHERE created_at < ${CUTOFF} AND NOT EXISTS (SELECT 1 FROM execution_dlq d
    WHERE d.tenant_id = redrive_audit.tenant_id AND d.execution_id = redrive_audit.execution_id AND d.record_version <= redrive_audit.from_version)`,
  redrive_job_item: `redrive_job_item i JOIN redrive_job j ON j.tenant_id = i.tenant_id AND j.job_id = i.job_id
    WHERE j.status IN ('COMPLETED', 'ABORTED', 'FAILED') AND j.finished_at < ${CUTOFF}`,
  redrive_job: `redrive_job WHERE status IN ('COMPLETED', 'ABORTED', 'FAILED') AND finished_at < ${CUTOFF}
    AND NOT EXISTS (SELECT 1 FROM redrive_job_item i WHERE i.tenant_id = redrive_job.tenant_id AND i.job_id = redrive_job.job_id)`,
  item_reject: `item_reject WHERE created_at < ${CUTOFF}`,
  checkpoint_outbox: `checkpoint_outbox WHERE status = 'ADMITTED' AND admitted_at < ${CUTOFF}`,
  execution_dispatch: `execution_dispatch WHERE status = 'STARTED' AND started_at < ${CUTOFF}`,
  signal_minute: `signal_minute WHERE minute < ${CUTOFF}`,
  signal_minute_compacted: `signal_minute WHERE shard >= 0 AND minute < date_trunc('hour', ${CUTOFF})`,
  dlq_group_day: `dlq_group_day WHERE n = 0 AND day < ${CUTOFF}`,
} as const;

/** A kind of row retention deletes (or, `signal_minute_compacted`, rolls into hours), named by the table its batch limit applies to. */
export type RetentionKind = keyof typeof ELIGIBLE;

export class RetentionStore {
  constructor(readonly db: Db) {}

  /** SUCCEEDED records older than the cutoff, with their Command effects and attempt log. */
  succeededExecutions(retentionMs: number, limit: number): Promise<Deleted> {
    return this.counts(
      `WITH doomed AS (
         SELECT tenant_id, execution_id FROM ${ELIGIBLE.execution_record} ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED),
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
    return this.deleteByKey('execution_dlq', ['id'], 'ORDER BY redriven_at', retentionMs, limit);
  }

  /** Audit rows older than the cutoff, unless an envelope they explain is still kept. */
  redriveAudit(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('redrive_audit', ['tenant_id', 'execution_id', 'redrive_id'], 'ORDER BY created_at', retentionMs, limit);
  }

  itemRejects(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('item_reject', ['id'], 'ORDER BY created_at', retentionMs, limit);
  }

  admittedCheckpoints(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('checkpoint_outbox', ['tenant_id', 'handoff_key'], 'ORDER BY admitted_at', retentionMs, limit);
  }

  startedDispatches(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('execution_dispatch', ['tenant_id', 'execution_id', 'dispatch_id'], 'ORDER BY started_at', retentionMs, limit);
  }

  /** Per-minute signal counts older than any triage window reads. */
  signalMinutes(retentionMs: number, limit: number): Promise<Deleted> {
    return this.deleteByKey('signal_minute', ['tenant_id', 'signal', 'minute', 'key', 'detail', 'shard'], 'ORDER BY minute', retentionMs, limit);
  }

  /** Items of bulk re-drive jobs that finished (COMPLETED or ABORTED) longer ago than the cutoff. */
  finishedJobItems(retentionMs: number, limit: number): Promise<Deleted> {
    return this.counts(
      `WITH doomed AS (
         SELECT i.tenant_id, i.job_id, i.execution_id FROM ${ELIGIBLE.redrive_job_item} LIMIT $2 FOR UPDATE OF i SKIP LOCKED),
       gone AS (DELETE FROM redrive_job_item t USING doomed d WHERE t.tenant_id = d.tenant_id AND t.job_id = d.job_id AND t.execution_id = d.execution_id RETURNING 1)
       SELECT count(*) AS redrive_job_item FROM gone`,
      [retentionMs, limit],
    );
  }

  /** Finished bulk re-drive jobs past the cutoff whose items are gone, with their counter rows. */
  finishedJobs(retentionMs: number, limit: number): Promise<Deleted> {
    return this.counts(
      `WITH doomed AS (
         SELECT tenant_id, job_id FROM ${ELIGIBLE.redrive_job} ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM redrive_job t USING doomed d WHERE t.tenant_id = d.tenant_id AND t.job_id = d.job_id RETURNING 1),
       counters AS (DELETE FROM redrive_job_count t USING doomed d WHERE t.tenant_id = d.tenant_id AND t.job_id = d.job_id RETURNING 1)
       SELECT (SELECT count(*) FROM gone) AS redrive_job, (SELECT count(*) FROM counters) AS redrive_job_count`,
      [retentionMs, limit],
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
         SELECT tenant_id, signal, minute, key, detail, shard FROM ${ELIGIBLE.signal_minute_compacted} ORDER BY minute LIMIT $2 FOR UPDATE SKIP LOCKED),
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
    return this.deleteByKey('dlq_group_day', ['tenant_id', 'group_id', 'day'], '', retentionMs, limit);
  }

  /**
   * Rows of `kind` past retention now, counted up to `cap` (the backlog gauge: a count that
   * stops at the cap costs at most `cap` index entries, whatever the backlog).
   */
  async pending(kind: RetentionKind, retentionMs: number, cap: number): Promise<number> {
    const result = await this.db.query(`SELECT count(*)::bigint AS n FROM (SELECT 1 FROM ${ELIGIBLE[kind]} LIMIT $2) s`, [retentionMs, cap]);
    return result.rows[0] === undefined ? 0 : readRow(kind, z.object({ n: num }), result.rows[0]).n;
  }

  /** One statement: lock a batch of candidates (oldest first by `order`, skipping rows another deleter holds), delete them by key. */
  private deleteByKey(
    table: Exclude<RetentionKind, 'signal_minute_compacted'>,
    key: string[],
    order: string,
    retentionMs: number,
    limit: number,
  ): Promise<Deleted> {
    const join = key.map((column) => `t.${column} = doomed.${column}`).join(' AND ');
    return this.counts(
      `WITH doomed AS (SELECT ${key.join(', ')} FROM ${ELIGIBLE[table]} ${order} LIMIT $2 FOR UPDATE SKIP LOCKED),
       gone AS (DELETE FROM ${table} t USING doomed WHERE ${join} RETURNING 1)
       SELECT count(*) AS ${table} FROM gone`,
      [retentionMs, limit],
    );
  }

  private async counts(sql: string, params: unknown[]): Promise<Deleted> {
    const row = (await this.db.query(sql, params)).rows[0];
    return row === undefined ? {} : readRow('retention', CountsColumns, row);
  }
}
