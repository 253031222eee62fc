/**
 * A bulk job's gate: its rate is a ceiling (no 1 s window of admissions holds more than the
 * rate rounded up, plus one at a window's edge). The single re-drive's admission statement
 * knows nothing of jobs; a job runs it inside this gate, in one
 * transaction with the job row's lock:
 *
 * | step | statement | when it refuses |
 * |---|---|---|
 * | 1. gate | lock the job row; read its status and next admission time on the store's clock | not RUNNING or gone: JobNotAdmittingError; too soon: AdmissionTooSoonError with the time left. Nothing changed. |
 * | 2. admission | the re-drive's own statement (ExecutionStore.admitRedrive), its audit row at the gate's time | another writer moved the record first: null, and nothing else is written |
 * | 3. stamp | the job's item ADMITTED at the gate's time and counted; the job's next admission time moved on | the item was already ADMITTED (a retried transaction whose first commit landed): no second stamp |
 *
 * The pacing is a generic cell rate algorithm: admitted once the clock reaches the job's
 * `next_admission_at` less half a spacing, which then moves to max(itself, now) + spacing.
 * The half spacing absorbs a statement that came late without a burst (no 1 s window holds
 * more than the rate + 1), and n admissions span at least (n - 1.5) spacings. A next time
 * over a second and a spacing ahead (the store's clock stepped back) does not hold the gate
 * shut. The item and the audit row carry the gate's time, so either is the exact record of
 * the ceiling.
 */
import { z } from 'zod';
import { bool, num, readRow, text } from './columns';
import type { Db, Queryable } from './db';
import { named } from './named-params';
import { countItems, ITEM_COUNTED } from './redrive-job-store';

/**
 * A bulk job's admission refused by its rate gate: on the store's clock, the job's next admission
 * is not due yet (one per `spacingMs`). Nothing changed; the admission may be tried again in
 * `waitMs` (read under the job row's lock).
 */
export class AdmissionTooSoonError extends Error {
  constructor(
    readonly jobId: string,
    readonly spacingMs: number,
    readonly waitMs: number,
  ) {
    super(`bulk job ${jobId} admits one item per ${spacingMs} ms: its next admission is in ${waitMs} ms`);
    this.name = 'AdmissionTooSoonError';
  }
}

/** A bulk job's admission refused because the job is no longer RUNNING (paused, aborted, ended) or is gone. Nothing changed. */
export class JobNotAdmittingError extends Error {
  constructor(
    readonly jobId: string,
    readonly jobStatus: string | null,
  ) {
    super(jobStatus ? `bulk job ${jobId} is ${jobStatus}: it admits nothing` : `bulk job ${jobId} does not exist`);
    this.name = 'JobNotAdmittingError';
  }
}

/** One item's way through the gate. */
export interface GatedAdmission {
  tenantId: string;
  jobId: string;
  /** the job's rate as the least time between two of its admissions, on the store's clock (rounded up to whole ms: a shorter one would let a second hold more than the rate) */
  spacingMs: number;
  executionId: string;
  /** the re-drive's id: the item names it */
  redriveId: string;
}

/** The gate's view of the job, read under its row's lock. */
const GateColumns = z.object({ status: text, at: text, next_due: text, open: bool, wait_ms: num.nullable() });

export class JobGate {
  constructor(private readonly db: Db) {}

  /**
   * Runs `admit` (the admission statement, given the transaction and the time to record)
   * inside the job's gate. Answers what `admit` answered; when it moved the record (non-null),
   * the item is ADMITTED and the job's next admission time moved on, in the same transaction.
   */
  async admit<T>(item: GatedAdmission, admit: (q: Queryable, recordedAt: string) => Promise<T | null>): Promise<T | null> {
    const spacing = Math.max(1, Math.ceil(item.spacingMs));
    return this.db.transaction(async (tx) => {
      const gate = named(
        { tenantId: item.tenantId, jobId: item.jobId, spacing },
        (p) =>
          // The clock is read after the lock is had (the outer select runs on the locked row), so it sees the previous admission's stamp.
          `WITH locked AS (
           SELECT status, next_admission_at AS due FROM redrive_job WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} FOR UPDATE),
         gate AS (SELECT status, due, clock_timestamp() AS at, ${p.spacing}::integer * interval '1 millisecond' AS spacing FROM locked)
         SELECT status, at::text AS at, (greatest(coalesce(due, at), at) + spacing)::text AS next_due,
           (due IS NULL OR at >= due - spacing / 2 OR due > at + interval '1 second' + spacing) AS open,
           ceil(extract(epoch FROM due - spacing / 2 - at) * 1000)::int AS wait_ms
         FROM gate`,
      );
      const found = await tx.query(gate.text, gate.params);
      if (!found.rowCount) throw new JobNotAdmittingError(item.jobId, null);
      const view = readRow('redrive_job', GateColumns, found.rows[0], `${item.tenantId}/${item.jobId}`);
      if (view.status !== 'RUNNING') throw new JobNotAdmittingError(item.jobId, view.status);
      if (!view.open) throw new AdmissionTooSoonError(item.jobId, spacing, Math.max(1, Math.min(spacing, view.wait_ms ?? spacing)));
      const moved = await admit(tx, view.at);
      if (moved === null) return null;
      const stamp = named(
        { tenantId: item.tenantId, jobId: item.jobId, executionId: item.executionId, redriveId: item.redriveId, at: view.at, nextDue: view.next_due },
        (p) =>
          `WITH item AS (
             UPDATE redrive_job_item SET state = 'ADMITTED', redrive_id = ${p.redriveId}, processed_at = ${p.at}::timestamptz
             WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} AND execution_id = ${p.executionId} AND state = 'SELECTED'
             RETURNING ${ITEM_COUNTED}),
           counted AS (${countItems('item')}),
           stamp AS (
             UPDATE redrive_job SET next_admission_at = ${p.nextDue}::timestamptz
             WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} AND EXISTS (SELECT 1 FROM item))
           SELECT 1`,
      );
      await tx.query(stamp.text, stamp.params);
      return moved;
    });
  }
}
