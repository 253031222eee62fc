/**
 * An execution's story from the store, in one round trip: the runs its dispatch rows
 * started (and the runs it did not start, which it refused), every committed step outcome from the attempt log, every re-drive from the
 * audit, and its DLQ envelopes. Read-only.
 */
import type { AttemptOutcome } from '../spec-words';
import type { Db } from './db';

export interface RunRow {
  dispatch_id: string;
  status: 'PENDING' | 'STARTED';
  run_id: string | null;
  attempts: number;
  last_error: string | null;
  created_at: string;
  started_at: string | null;
}

export interface AttemptRow {
  step_index: number;
  /** the definition version the step ran under (null before versions) */
  pipeline_version: number | null;
  attempt: number;
  outcome: AttemptOutcome;
  error_code: string | null;
  run_id: string | null;
  version: number;
  evidence: Record<string, unknown> | null;
  committed_at: string;
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
  created_at: string;
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
  created_at: string;
}

/** A run the orchestrator did not start, refused by its first step (execution_foreign_run). */
export interface ForeignRunRow {
  run_id: string;
  owner_run_id: string | null;
  record_status: string;
  reason: string;
  noticed_at: string;
}

export interface HistoryRows {
  runs: RunRow[];
  foreign_runs: ForeignRunRow[];
  attempts: AttemptRow[];
  redrives: RedriveRow[];
  envelopes: EnvelopeRow[];
}

const list = (sql: string, order: string) => `(SELECT coalesce(json_agg(x ORDER BY ${order}), '[]'::json) FROM (${sql}) x)`;

export class HistoryStore {
  constructor(private readonly db: Db) {}

  async history(tenantId: string, executionId: string): Promise<HistoryRows> {
    const where = 'WHERE tenant_id = $1 AND execution_id = $2';
    const result = await this.db.query<HistoryRows>(
      `SELECT
         ${list(`SELECT dispatch_id, status, run_id, attempts, last_error, created_at, started_at FROM execution_dispatch ${where}`, 'x.created_at, x.dispatch_id')} AS runs,
         ${list(`SELECT run_id, owner_run_id, record_status, reason, noticed_at FROM execution_foreign_run ${where}`, 'x.noticed_at, x.run_id')} AS foreign_runs,
         ${list(`SELECT step_index, attempt, outcome, error_code, run_id, version, evidence, committed_at, pipeline_version FROM execution_attempt ${where}`, 'x.version')} AS attempts,
         ${list(`SELECT redrive_id, principal, reason, mode, from_status, from_version, to_version, resume_step_index, attempt, confirmed_disposition, job_id, created_at, from_pipeline_version, to_pipeline_version, repair FROM redrive_audit ${where}`, 'x.created_at, x.from_version')} AS redrives,
         ${list(`SELECT id, transition_key, terminal_reason, error_code, group_id, record_version, created_at FROM execution_dlq ${where}`, 'x.id')} AS envelopes`,
      [tenantId, executionId],
    );
    return result.rows[0];
  }
}
