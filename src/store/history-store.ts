/**
 * An execution's story from the store, in one round trip: the runs its dispatch rows
 * started (and the runs it did not start, which it refused), every committed step outcome from the attempt log, every re-drive from the
 * audit, and its DLQ envelopes. Read-only.
 */
import { z } from 'zod';
import type { Db } from './db';
import { num, readRow, text, time } from './columns';
import { ExecutionAttemptColumns, ExecutionDispatchColumns, ExecutionDlqColumns, type AttemptRow } from './rows';

export type { AttemptRow } from './rows';

export interface RunRow {
  dispatch_id: string;
  status: 'PENDING' | 'STARTED';
  run_id: string | null;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  started_at: Date | null;
}

export interface RedriveRow {
  redrive_id: string;
  principal: string;
  reason: string;
  mode: string;
  from_status: string;
  from_version: number;
  /** the definition versions the re-drive moved the execution between (null before versions) */
  from_pipeline_version: number | null;
  to_pipeline_version: number | null;
  to_version: number;
  resume_step_index: number;
  attempt: number;
  confirmed_disposition: string | null;
  job_id: string | null;
  created_at: Date;
  /** a corrected input (the RepairAudit of src/repair/correct-input.ts), or null */
  repair: { kind: string; changedPaths: string[]; beforeFingerprint: string; afterFingerprint: string } | null;
}

export interface EnvelopeRow {
  id: number;
  transition_key: string;
  terminal_reason: string;
  error_code: string;
  group_id: string | null;
  record_version: number;
  created_at: Date;
}

/** A run the orchestrator did not start, refused by its first step (execution_foreign_run). */
export interface ForeignRunRow {
  run_id: string;
  owner_run_id: string | null;
  record_status: string;
  reason: string;
  noticed_at: Date;
}

export interface HistoryRows {
  runs: RunRow[];
  foreign_runs: ForeignRunRow[];
  attempts: AttemptRow[];
  redrives: RedriveRow[];
  envelopes: EnvelopeRow[];
}

const RunColumns = ExecutionDispatchColumns.pick({
  dispatch_id: true,
  status: true,
  run_id: true,
  attempts: true,
  last_error: true,
  created_at: true,
  started_at: true,
}) satisfies z.ZodType<RunRow>;

const RedriveAuditColumns = z.object({
  redrive_id: text,
  principal: text,
  reason: text,
  mode: text,
  from_status: text,
  from_version: num,
  from_pipeline_version: num.nullable(),
  to_pipeline_version: num.nullable(),
  to_version: num,
  resume_step_index: num,
  attempt: num,
  confirmed_disposition: text.nullable(),
  job_id: text.nullable(),
  created_at: time,
  repair: z.object({ kind: text, changedPaths: z.array(text), beforeFingerprint: text, afterFingerprint: text }).nullable(),
}) satisfies z.ZodType<RedriveRow>;

const EnvelopeColumns = ExecutionDlqColumns.pick({
  id: true,
  transition_key: true,
  terminal_reason: true,
  error_code: true,
  group_id: true,
  record_version: true,
  created_at: true,
}) satisfies z.ZodType<EnvelopeRow>;

const ForeignRunColumns = z.object({
  run_id: text,
  owner_run_id: text.nullable(),
  record_status: text,
  reason: text,
  noticed_at: time,
}) satisfies z.ZodType<ForeignRunRow>;

/** The one row `history` reads: each table's rows as a JSON array, each element checked against its table's columns. */
export const HistoryColumns = z.object({
  runs: z.array(RunColumns),
  foreign_runs: z.array(ForeignRunColumns),
  attempts: z.array(ExecutionAttemptColumns),
  redrives: z.array(RedriveAuditColumns),
  envelopes: z.array(EnvelopeColumns),
}) satisfies z.ZodType<HistoryRows>;

const list = (sql: string, order: string) => `(SELECT coalesce(json_agg(x ORDER BY ${order}), '[]'::json) FROM (${sql}) x)`;

export class HistoryStore {
  constructor(private readonly db: Db) {}

  async history(tenantId: string, executionId: string): Promise<HistoryRows> {
    const where = 'WHERE tenant_id = $1 AND execution_id = $2';
    const result = await this.db.query(
      `SELECT
         ${list(`SELECT dispatch_id, status, run_id, attempts, last_error, created_at, started_at FROM execution_dispatch ${where}`, 'x.created_at, x.dispatch_id')} AS runs,
         ${list(`SELECT run_id, owner_run_id, record_status, reason, noticed_at FROM execution_foreign_run ${where}`, 'x.noticed_at, x.run_id')} AS foreign_runs,
         ${list(`SELECT step_index, attempt, outcome, error_code, run_id, version, evidence, committed_at, pipeline_version FROM execution_attempt ${where}`, 'x.version')} AS attempts,
         ${list(`SELECT redrive_id, principal, reason, mode, from_status, from_version, to_version, resume_step_index, attempt, confirmed_disposition, job_id, created_at, from_pipeline_version, to_pipeline_version, repair FROM redrive_audit ${where}`, 'x.created_at, x.from_version')} AS redrives,
         ${list(`SELECT id, transition_key, terminal_reason, error_code, group_id, record_version, created_at FROM execution_dlq ${where}`, 'x.id')} AS envelopes`,
      [tenantId, executionId],
    );
    // The column names the table: `attempts` (execution_attempt), `redrives` (redrive_audit), …; the path names the element and its column.
    return readRow('execution_history', HistoryColumns, result.rows[0], `${tenantId}/${executionId}`);
  }
}
