/**
 * A bulk job's gate: its rate is a ceiling (no 1 s window of admissions holds more than the
 * rate rounded up, plus one at a window's edge). The single re-drive's admission statement
 * knows nothing of jobs; a job composes this gate onto it (ExecutionStore.admitRedrive's
 * guard), so the gate shares its one round trip and transaction:
 *
 * | part | what it does | when it refuses |
 * |---|---|---|
 * | before the move | lock the job row; read its status and next admission time on the store's clock | not RUNNING or gone: JobNotAdmittingError; too soon: AdmissionTooSoonError with the time left. The record does not move: nothing changed |
 * | with the move | the item ADMITTED and counted, the job's next admission time moved on; the item and the audit row carry the gate's time | another writer moved the record first: nothing of the job is written either |
 *
 * The job row's lock is taken first and held only while the statement runs: a fast job's lanes
 * do not queue on it across round trips, and its locks come in one order. An item already
 * ADMITTED (a statement retried after its first answer was lost) is not stamped again.
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
import type { AdmissionGuard } from './execution-store';
import type { Placeholders } from './named-params';
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

/** The gate's answer: the job's status (null: gone), whether it was open, and the time left when not. */
const GateColumns = z.object({ job_status: text.nullable(), gate_open: bool, wait_ms: num.nullable() });

/** A bulk job's gate for one item's admission: the guard ExecutionStore.admitRedrive composes onto its statement. */
export function jobGate(item: GatedAdmission) {
  const spacing = Math.max(1, Math.ceil(item.spacingMs));
  const values = { tenantId: item.tenantId, jobId: item.jobId, executionId: item.executionId, redriveId: item.redriveId, spacing };
  return {
    values,
    // The clock is read after the lock is had (the select over the locked row runs once it is locked), so it sees the previous admission's stamp.
    ctes: (p: Placeholders<typeof values>) => `locked AS (
         SELECT status, next_admission_at AS due FROM redrive_job WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} FOR UPDATE),
       gate AS (SELECT status, due, clock_timestamp() AS at, ${p.spacing}::integer * interval '1 millisecond' AS spacing FROM locked),
       open AS (
         SELECT at, greatest(coalesce(due, at), at) + spacing AS next_due FROM gate
         WHERE status = 'RUNNING' AND (due IS NULL OR at >= due - spacing / 2 OR due > at + interval '1 second' + spacing))`,
    after: (p: Placeholders<typeof values>) => `job_item AS (
         UPDATE redrive_job_item SET state = 'ADMITTED', redrive_id = ${p.redriveId}, processed_at = (SELECT at FROM open)
         WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} AND execution_id = ${p.executionId} AND state = 'SELECTED'
           AND EXISTS (SELECT 1 FROM moved)
         RETURNING ${ITEM_COUNTED}),
       job_count AS (${countItems('job_item')}),
       job_stamp AS (
         UPDATE redrive_job SET next_admission_at = (SELECT next_due FROM open)
         WHERE tenant_id = ${p.tenantId} AND job_id = ${p.jobId} AND EXISTS (SELECT 1 FROM moved))`,
    answer: () => `(SELECT status FROM gate) AS job_status, EXISTS (SELECT 1 FROM open) AS gate_open,
         (SELECT ceil(extract(epoch FROM due - spacing / 2 - at) * 1000)::int FROM gate) AS wait_ms`,
    check(row: unknown) {
      const view = readRow('redrive_job', GateColumns, row, `${item.tenantId}/${item.jobId}`);
      if (view.job_status !== 'RUNNING') throw new JobNotAdmittingError(item.jobId, view.job_status);
      if (!view.gate_open) throw new AdmissionTooSoonError(item.jobId, spacing, Math.max(1, Math.min(spacing, view.wait_ms ?? spacing)));
    },
  } satisfies AdmissionGuard<typeof values>;
}
