/**
 * The tables' rows as `pg` and PGlite hand them back: one snake_case interface per table,
 * column for column with the migrations in `./migrations/` (the dispatch outbox's row
 * lives beside its store, in dispatch-store.ts). The stores map these to the
 * camelCase objects the rest of the service uses; nothing outside `src/store/` sees a row.
 *
 * Timestamps arrive as `Date` from both drivers; int8 columns (bigserial ids) arrive as
 * numbers (db.ts installs the parser); jsonb arrives parsed.
 */
import type { CheckpointStatus } from '../spec-words';
import type { EffectStatus, ExecutionStatus, TerminalReason } from '../spec-words';

export interface ExecutionRecordRow {
  tenant_id: string;
  execution_id: string;
  execution_key: string | null;
  pipeline: string;
  /** the definition version the execution is pinned to (20261122150000) */
  pipeline_version: number;
  definition_fingerprint: string | null;
  workflow_id: string;
  status: ExecutionStatus;
  version: number;
  step_count: number;
  current_step_index: number;
  attempt: number;
  failed_step_index: number | null;
  segment_input: unknown;
  next_due_at: Date | null;
  run_id: string | null;
  redrive_count: number;
  correlation_id: string | null;
  resource_type: string | null;
  resource_name: string | null;
  terminal_reason: TerminalReason | null;
  last_error_code: string | null;
  last_error_message: string | null;
  /** RemoteCall as JSON, while REMOTE_OUTCOME_UNKNOWN */
  remote_call: unknown;
  created_at: Date;
  updated_at: Date;
  /** the admission that created the row (replay-safe create) */
  admission_id: string | null;
}

/**
 * The record's columns by name, for the statements sent as prepared statements (`Db.prepared`):
 * a `*` prepared before a migration adds a column would fail once it has. Every field of
 * ExecutionRecordRow, no more (the type check below fails when one is missing).
 */
export const RECORD_COLUMNS = [
  'tenant_id',
  'execution_id',
  'execution_key',
  'pipeline',
  'pipeline_version',
  'definition_fingerprint',
  'workflow_id',
  'status',
  'version',
  'step_count',
  'current_step_index',
  'attempt',
  'failed_step_index',
  'segment_input',
  'next_due_at',
  'run_id',
  'redrive_count',
  'correlation_id',
  'resource_type',
  'resource_name',
  'terminal_reason',
  'last_error_code',
  'last_error_message',
  'remote_call',
  'created_at',
  'updated_at',
  'admission_id',
] as const satisfies readonly (keyof ExecutionRecordRow)[];
const everyRecordColumn: Exclude<keyof ExecutionRecordRow, (typeof RECORD_COLUMNS)[number]> extends never ? true : never = true;
void everyRecordColumn;
/** RECORD_COLUMNS as a select list. */
export const RECORD_SELECT = RECORD_COLUMNS.join(', ');

export interface CommandEffectRow {
  tenant_id: string;
  execution_id: string;
  step_index: number;
  step_name: string;
  status: EffectStatus;
  attempt: number;
  transition_key: string;
  result: unknown;
  error_code: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ExecutionDlqRow {
  id: number;
  tenant_id: string;
  execution_id: string;
  transition_key: string;
  terminal_reason: TerminalReason;
  error_code: string;
  record_version: number;
  envelope: unknown;
  created_at: Date;
  published_at: Date | null;
  publish_attempts: number;
  publish_lease_until: Date | null;
  publish_error: string | null;
}

export interface ItemRejectRow {
  id: number;
  tenant_id: string;
  execution_id: string;
  transition_key: string;
  ordinal: number;
  step: string;
  item_key: string | null;
  error_code: string;
  reason: string;
  fingerprint: string;
  created_at: Date;
}

export interface CheckpointOutboxRow {
  tenant_id: string;
  handoff_key: string;
  pipeline: string;
  records: unknown[];
  record_count: number;
  status: CheckpointStatus;
  attempts: number;
  next_attempt_at: Date;
  lease_owner: string | null;
  lease_until: Date | null;
  last_error: string | null;
  execution_id: string;
  created_at: Date;
  admitted_at: Date | null;
}

/** An ISO-8601 string for a timestamp column (null stays null). */
export function isoOrNull(value: Date | string | null): string | null {
  if (value == null) return null;
  return value instanceof Date ? value.toISOString() : new Date(value).toISOString();
}

export function iso(value: Date | string): string {
  return value instanceof Date ? value.toISOString() : new Date(value).toISOString();
}

/** A start the store admitted, as an execution's read (`pendingStart`) and its history (`runs[]`) say it. */
export interface StartView {
  dispatchId: string;
  requestedAt: string;
  startAttempts: number;
  lastError: string | null;
}

/** The columns of an execution_dispatch row that say its start. */
export interface DispatchStartColumns {
  dispatch_id: string;
  created_at: Date | string;
  attempts: number;
  last_error: string | null;
}

export function startView(row: DispatchStartColumns): StartView {
  return { dispatchId: row.dispatch_id, requestedAt: iso(row.created_at), startAttempts: row.attempts, lastError: row.last_error };
}

export interface PipelineDefinitionRow {
  pipeline: string;
  version: number;
  fingerprint: string;
  /** the step names in order */
  steps: string[];
  /** each step's name, transport and Command flag; null on rows from before the column */
  shape: { name: string; transport: string; command: boolean }[] | null;
  created_at: Date;
}
