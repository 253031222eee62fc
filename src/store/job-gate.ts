/**
 * A bulk job's gate: its rate is a ceiling (no 1 s window of admissions holds more than the
 * rate rounded up, plus one at a window's edge). The single re-drive's admission statement
 * knows nothing of jobs; a job runs it inside this gate, in one
 * transaction with the job row's lock:
 *
 * | step | statement | when it refuses |
 * |---|---|---|
 * | 1. admission | the re-drive's own statement (ExecutionStore.admitRedrive) | another writer moved the record first: null, and the transaction writes nothing |
 * | 2. gate | lock the job row; read its status and next admission time on the store's clock; when open, turn the item ADMITTED and count it, move the job's next admission time on, and stamp the item and the audit row with the gate's time | not RUNNING or gone: JobNotAdmittingError; too soon: AdmissionTooSoonError with the time left. The transaction rolls back: the admission is undone, nothing changed |
 *
 * The job row's lock is taken last, so it is held for one statement and the commit: the
 * admissions of one job run one at a time only there (taken first, it was held across the
 * admission's round trips too, and a 100/s job's lanes queued on it).
 * An item already ADMITTED (a retried transaction whose first commit landed) is not stamped again.
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
import type { Db, Statements } from './db';
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

/** The gate's answer, read under the job row's lock: the job's status (null: gone), whether it was open, and the time left when not. */
const GateColumns = z.object({ status: text.nullable(), open: bool, wait_ms: num.nullable() });

export class JobGate {
  constructor(private readonly db: Db) {}

  /**
   * Runs `admit` (the admission statement, given the transaction) inside the job's gate.
   * Answers what `admit` answered; when it moved the record (non-null), the item is ADMITTED
   * and the job's next admission time moved on, in the same transaction, or the gate refuses
   * and the admission is rolled back.
   */
  async admit<T>(item: GatedAdmission, admit: (q: Statements) => Promise<T | null>): Promise<T | null> {
    const spacing = Math.max(1, Math.ceil(item.spacingMs));
    const gate = named(
      { tenantId: item.tenantId, jobId: item.jobId, executionId: item.executionId, redriveId: item.redriveId, spacing },
      (p) =>
        // The clock is read after the lock is had (the select over the locked row runs once it is locked), so it sees the previous admission's stamp.
        `WITH locked AS (
         SELECT status, next_admission_at AS due FROM redrive_job WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} FOR UPDATE),
       gate AS (SELECT status, due, clock_timestamp() AS at, ${p.spacing}::integer * interval '1 millisecond' AS spacing FROM locked),
       open AS (
         SELECT at, greatest(coalesce(due, at), at) + spacing AS next_due FROM gate
         WHERE status = 'RUNNING' AND (due IS NULL OR at >= due - spacing / 2 OR due > at + interval '1 second' + spacing)),
       item AS (
         UPDATE redrive_job_item SET state = 'ADMITTED', redrive_id = ${p.redriveId}, processed_at = (SELECT at FROM open)
         WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} AND execution_id = ${p.executionId} AND state = 'SELECTED'
           AND EXISTS (SELECT 1 FROM open)
         RETURNING ${ITEM_COUNTED}),
       counted AS (${countItems('item')}),
       stamp AS (
         UPDATE redrive_job SET next_admission_at = (SELECT next_due FROM open)
         WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} AND EXISTS (SELECT 1 FROM item)),
       audit AS (
         UPDATE redrive_audit SET created_at = (SELECT at FROM open)
         WHERE tenant_id = ${p.tenantId} AND execution_id = ${p.executionId} AND redrive_id = ${p.redriveId} AND EXISTS (SELECT 1 FROM item))
       SELECT (SELECT status FROM gate) AS status, EXISTS (SELECT 1 FROM open) AS open,
         (SELECT ceil(extract(epoch FROM due - spacing / 2 - at) * 1000)::int FROM gate) AS wait_ms`,
    );
    return this.db.transaction(async (tx) => {
      const moved = await admit(tx);
      if (moved === null) return null;
      const found = await tx.prepared(gate.text, gate.params);
      const view = readRow('redrive_job', GateColumns, found.rows[0], `${item.tenantId}/${item.jobId}`);
      // Refused: thrown inside the transaction, so the admission above is rolled back.
      if (view.status !== 'RUNNING') throw new JobNotAdmittingError(item.jobId, view.status);
      if (!view.open) throw new AdmissionTooSoonError(item.jobId, spacing, Math.max(1, Math.min(spacing, view.wait_ms ?? spacing)));
      return moved;
    });
  }
}
