/**
 * The signals triage and the metrics gauges read, each costing what its window (or the
 * present backlog) holds, never what history holds:
 *   - per-minute event counts (`signal_minute`) and present totals (`signal_total`), kept
 *     by triggers in the same statement as the rows they count (migration
 *     20261122130000_signals.sql);
 *   - "now" backlogs (pending checkpoints, runs waiting on a retry, unpublished envelopes)
 *     read through partial indexes that hold only those rows.
 * Windows are counted in whole minutes: the current window is the last ⌈window⌉ minutes
 * including the minute in progress, the previous one the same number of minutes before it.
 * Counts older than 3 hours are rolled into hours by retention (shard -1): a longer window
 * counts that part of itself by the hour an event fell in.
 */
import { z } from 'zod';
import { TERMINAL_REASONS, type TerminalFailureStatus, type TerminalReason } from '../spec-words';
import type { Db } from './db';
import { num, readRow, readRows, text } from './columns';

/** How long signal counts are kept: the longest triage window (24h) and the one before it, plus an hour. */
export const SIGNAL_MINUTES_KEPT_MS = 49 * 3_600_000;
/**
 * How long counts stay per minute before retention rolls them into hours: a window of up to
 * an hour, compared with the hour before it, is counted to the minute; longer windows count
 * their older part by the hour.
 */
export const SIGNAL_MINUTES_EXACT_MS = 3 * 3_600_000;

export type TotalSignal = 'dlq' | 'reject' | TerminalFailureStatus;

export interface WindowCounts {
  current: number;
  previous: number;
}

export interface TriageSignals {
  executionDlq: WindowCounts;
  itemRejects: WindowCounts;
  executionsSucceeded: WindowCounts;
  /** pending checkpoints now, and at the start of the current window */
  checkpointBacklog: WindowCounts;
  /** the most frequent (errorCode, terminalReason) of the current window's DLQ envelopes */
  dominantDlq: { errorCode: string; terminalReason: TerminalReason; envelopes: number } | null;
  /** the most frequent reject fingerprint of the current window, and all rejects of the window */
  topFingerprint: { fingerprint: string; n: number; total: number } | null;
}

/** signal_minute summed over the two windows, by signal. */
const WindowColumns = z.object({ signal: z.enum(['succeeded', 'dlq', 'reject']), cur: num, prev: num });
/** signal_minute's most frequent (key, detail) of a signal in the window. */
const TopColumns = z.object({ key: text, detail: text, n: num, total: num });
/** The DLQ's top: its detail is the envelopes' terminal reason. */
const TopDlqColumns = TopColumns.extend({ detail: z.enum(TERMINAL_REASONS) });
const BacklogColumns = z.object({ now: num, start: num });
const NumberColumns = z.object({ n: num.nullable() });
const AttentionColumns = z.object({ halted: num, paused: num, stuck: num });

export class SignalsStore {
  constructor(readonly db: Db) {}

  /** Everything triage classifies, for one tenant or all, over `windowMs` against the window before it. */
  async triage(windowMs: number, tenantId?: string): Promise<TriageSignals> {
    const minutes = Math.max(1, Math.ceil(windowMs / 60_000));
    const tenant = tenantId === undefined ? '' : 'AND tenant_id = $2';
    const params = tenantId === undefined ? [minutes] : [minutes, tenantId];
    const currentStart = `date_trunc('minute', now()) - make_interval(mins => $1 - 1)`;
    const top = (signal: 'dlq' | 'reject') =>
      this.db.query(
        `SELECT key, detail, sum(n)::bigint AS n, sum(sum(n)) OVER ()::bigint AS total FROM signal_minute
         WHERE signal = '${signal}' AND minute >= ${currentStart} ${tenant}
         GROUP BY key, detail ORDER BY n DESC, key, detail LIMIT 1`,
        params,
      );
    const [windows, dlq, reject, backlog] = await Promise.all([
      this.db.query(
        `SELECT signal, coalesce(sum(n) FILTER (WHERE minute >= ${currentStart}), 0)::bigint AS cur,
                coalesce(sum(n) FILTER (WHERE minute < ${currentStart}), 0)::bigint AS prev
         FROM signal_minute WHERE signal IN ('succeeded', 'dlq', 'reject') AND minute >= ${currentStart} - make_interval(mins => $1) ${tenant}
         GROUP BY signal`,
        params,
      ),
      top('dlq'),
      top('reject'),
      this.checkpointBacklog(windowMs / 1000, tenantId),
    ]);
    const windowRows = readRows('signal_minute', WindowColumns, windows.rows);
    const counts = (signal: z.output<typeof WindowColumns>['signal']): WindowCounts => {
      const row = windowRows.find((r) => r.signal === signal);
      return { current: Number(row?.cur ?? 0), previous: Number(row?.prev ?? 0) };
    };
    const dominant = dlq.rows[0] === undefined ? undefined : readRow('signal_minute', TopDlqColumns, dlq.rows[0]);
    const fingerprint = reject.rows[0] === undefined ? undefined : readRow('signal_minute', TopColumns, reject.rows[0]);
    return {
      executionDlq: counts('dlq'),
      itemRejects: counts('reject'),
      executionsSucceeded: counts('succeeded'),
      checkpointBacklog: backlog,
      dominantDlq: dominant ? { errorCode: dominant.key, terminalReason: dominant.detail, envelopes: dominant.n } : null,
      topFingerprint: fingerprint ? { fingerprint: fingerprint.key, n: fingerprint.n, total: fingerprint.total } : null,
    };
  }

  /**
   * Checkpoints pending now, and pending at the start of the window (accepted before it and
   * admitted within it or not yet): the pending partial index plus the admitted-at index.
   */
  private async checkpointBacklog(seconds: number, tenantId?: string): Promise<WindowCounts> {
    const tenant = tenantId === undefined ? '' : 'AND tenant_id = $2';
    const params = tenantId === undefined ? [seconds] : [seconds, tenantId];
    const result = await this.db.query(
      `SELECT (SELECT count(*) FROM checkpoint_outbox WHERE status = 'PENDING' ${tenant})::int AS now,
              ((SELECT count(*) FROM checkpoint_outbox WHERE status = 'PENDING' AND created_at <= now() - make_interval(secs => $1) ${tenant})
             + (SELECT count(*) FROM checkpoint_outbox WHERE status = 'ADMITTED' AND admitted_at > now() - make_interval(secs => $1)
                  AND created_at <= now() - make_interval(secs => $1) ${tenant}))::int AS start`,
      params,
    );
    const backlog = readRow('checkpoint_outbox', BacklogColumns, result.rows[0]);
    return { current: backlog.now, previous: backlog.start };
  }

  /** What a table holds now (DLQ envelopes, item rejects) or how many records are in a status, over all tenants. */
  async total(signal: TotalSignal): Promise<number> {
    return this.number(`SELECT sum(n)::bigint AS n FROM signal_total WHERE signal = $1`, [signal]);
  }

  /** Envelopes a broker DLQ provider has not confirmed yet (the relay's backlog). */
  dlqUnpublished(): Promise<number> {
    return this.number('SELECT count(*)::bigint AS n FROM execution_dlq WHERE published_at IS NULL');
  }

  /** Share (0–1) of the most frequent reject fingerprint over the last hour, all tenants. */
  topFingerprintShare(): Promise<number> {
    return this.number(
      `SELECT coalesce(max(c)::float / nullif(sum(c), 0), 0) AS n FROM (
         SELECT sum(n) AS c FROM signal_minute WHERE signal = 'reject' AND minute >= date_trunc('minute', now()) - interval '59 minutes' GROUP BY key) f`,
    );
  }

  checkpointsPending(): Promise<number> {
    return this.number(`SELECT count(*)::bigint AS n FROM checkpoint_outbox WHERE status = 'PENDING'`);
  }

  checkpointLagSeconds(): Promise<number> {
    return this.oldestPendingAge('checkpoint_outbox');
  }

  /**
   * Age of the oldest start or re-drive admitted and not yet started in Temporal (its dispatch row
   * PENDING; the partial index on created_at reads it): Temporal refusing or not answering, or a run
   * of a dispatch this store does not know holding the workflow id.
   */
  dispatchLagSeconds(): Promise<number> {
    return this.oldestPendingAge('execution_dispatch');
  }

  /** Seconds since the oldest PENDING row of an outbox table was written; 0 when none is. */
  private oldestPendingAge(table: 'checkpoint_outbox' | 'execution_dispatch'): Promise<number> {
    return this.number(`SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float AS n FROM ${table} WHERE status = 'PENDING'`);
  }

  /** Runs waiting on a retry whose committed attempt is at least `attempt`. */
  waitingOnRetry(attempt: number): Promise<number> {
    return this.number(`SELECT count(*)::bigint AS n FROM execution_record WHERE status = 'RUNNING' AND next_due_at IS NOT NULL AND attempt >= $1`, [attempt]);
  }

  /**
   * Unfinished bulk re-drive jobs that need a look: halted (paused by a canary or haltOn),
   * paused (by an operator), stuck (RUNNING with items left and none processed, nor the job
   * changed, for `stuckAfterMs`). Reads only unfinished jobs and, for RUNNING ones, their items.
   */
  async redriveJobsNeedingAttention(stuckAfterMs: number): Promise<{ halted: number; paused: number; stuck: number }> {
    const result = await this.db.query(
      `SELECT count(*) FILTER (WHERE j.status = 'PAUSED' AND j.halt_reason IS NOT NULL)::int AS halted,
         count(*) FILTER (WHERE j.status = 'PAUSED' AND j.halt_reason IS NULL)::int AS paused,
         count(*) FILTER (WHERE j.status = 'RUNNING' AND j.updated_at < now() - $1::integer * interval '1 millisecond'
           AND EXISTS (SELECT 1 FROM redrive_job_item i WHERE i.tenant_id = j.tenant_id AND i.job_id = j.job_id AND i.state = 'SELECTED')
           AND NOT EXISTS (SELECT 1 FROM redrive_job_item i WHERE i.tenant_id = j.tenant_id AND i.job_id = j.job_id
             AND i.processed_at > now() - $1::integer * interval '1 millisecond'))::int AS stuck
       FROM redrive_job j WHERE j.status IN ('RUNNING', 'PAUSED')`,
      [stuckAfterMs],
    );
    return result.rows[0] === undefined ? { halted: 0, paused: 0, stuck: 0 } : readRow('redrive_job', AttentionColumns, result.rows[0]);
  }

  /** Recounts both signal tables from the rows: after a bulk load with triggers off. Reads whole tables. */
  async rebuild(): Promise<void> {
    await this.db.query('SELECT signal_rebuild()');
  }

  private async number(sql: string, params?: unknown[]): Promise<number> {
    const row = (await this.db.query(sql, params)).rows[0];
    return row === undefined ? 0 : (readRow('signals', NumberColumns, row).n ?? 0);
  }
}
