/**
 * The tables' rows as `pg` and PGlite hand them back: one snake_case interface per table,
 * column for column with the migrations in `./migrations/`, and beside it the table's
 * columns as a zod object (`…Columns`) that `readRow` (columns.ts) checks each row against,
 * JSON columns parsed with their schemas. A table read by one store only keeps its columns
 * beside that store: redrive_job, redrive_job_item and redrive_job_count (redrive-job-store.ts),
 * redrive_audit and execution_foreign_run (history-store.ts), remote_delivery
 * (execution-store.ts), the failure groups of execution_dlq and dlq_group_day
 * (failure-group-store.ts), pinned_count (definition-store.ts), the signal tables
 * (signals-store.ts). The stores map these to the camelCase objects the rest of the
 * service uses; nothing outside `src/store/` sees a row.
 *
 * Timestamps arrive as `Date` from both drivers; int8 columns (bigserial ids) arrive as
 * numbers (db.ts installs the parser); jsonb arrives parsed.
 */
import { z } from 'zod';
import {
  ATTEMPT_OUTCOMES,
  CHECKPOINT_STATUSES,
  EFFECT_STATUSES,
  EXECUTION_STATUSES,
  REDRIVE_MODES,
  TERMINAL_REASONS,
  type CheckpointStatus,
} from '../spec-words';
import type { AttemptOutcome, EffectStatus, ExecutionStatus, TerminalReason } from '../spec-words';
import { DlqEnvelope } from '../contract/dlq-envelope';
import { RemoteCallSchema } from '../contract/responses';
import { anyJson, num, readRow, text, time } from './columns';

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
  remote_call: z.output<typeof RemoteCallSchema> | null;
  created_at: Date;
  updated_at: Date;
  /** the admission that created the row (replay-safe create) */
  admission_id: string | null;
  /** a fork's lineage and audit (20261202520000): { executionId, stepIndex, version, principal, reason, repair, at } */
  forked_from: ForkedFromColumn | null;
}

/** execution_record.forked_from: the lineage (`executionId`, `stepIndex`, `version`) and the fork's audit. */
export interface ForkedFromColumn {
  executionId: string;
  stepIndex: number;
  version: number;
  principal: string;
  reason: string;
  /** the RepairAudit of a corrected input, or null */
  repair: unknown;
  at: string;
}

/** execution_record.forked_from, parsed. */
export const ForkedFromJson = z.object({
  executionId: text,
  stepIndex: num,
  version: num,
  principal: text,
  reason: text,
  repair: anyJson,
  at: text,
}) satisfies z.ZodType<ForkedFromColumn>;

export const ExecutionRecordColumns = z.object({
  tenant_id: text,
  execution_id: text,
  execution_key: text.nullable(),
  pipeline: text,
  pipeline_version: num,
  definition_fingerprint: text.nullable(),
  workflow_id: text,
  status: z.enum(EXECUTION_STATUSES),
  version: num,
  step_count: num,
  current_step_index: num,
  attempt: num,
  failed_step_index: num.nullable(),
  segment_input: anyJson,
  next_due_at: time.nullable(),
  run_id: text.nullable(),
  redrive_count: num,
  correlation_id: text.nullable(),
  resource_type: text.nullable(),
  resource_name: text.nullable(),
  terminal_reason: z.enum(TERMINAL_REASONS).nullable(),
  last_error_code: text.nullable(),
  last_error_message: text.nullable(),
  remote_call: RemoteCallSchema.nullable(),
  created_at: time,
  updated_at: time,
  admission_id: text.nullable(),
  forked_from: ForkedFromJson.nullable(),
}) satisfies z.ZodType<ExecutionRecordRow>;

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
  'forked_from',
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

export const CommandEffectColumns = z.object({
  tenant_id: text,
  execution_id: text,
  step_index: num,
  step_name: text,
  status: z.enum(EFFECT_STATUSES),
  attempt: num,
  transition_key: text,
  result: anyJson,
  error_code: text.nullable(),
  created_at: time,
  updated_at: time,
}) satisfies z.ZodType<CommandEffectRow>;

export interface ExecutionDlqRow {
  id: number;
  tenant_id: string;
  execution_id: string;
  transition_key: string;
  terminal_reason: TerminalReason;
  error_code: string;
  record_version: number;
  envelope: DlqEnvelope;
  /** the failure group's id and signature (contract/failure-group.ts) */
  group_id: string | null;
  signature: z.output<typeof FailureSignatureJson> | null;
  created_at: Date;
  published_at: Date | null;
  publish_attempts: number;
  publish_lease_until: Date | null;
  publish_error: string | null;
}

/** execution_dlq.signature and dlq_group_day.signature: a failure group's FailureSignature. */
export const FailureSignatureJson = z.object({ step: text, errorCode: text, terminalReason: text, transport: text, message: text });

export const ExecutionDlqColumns = z.object({
  id: num,
  tenant_id: text,
  execution_id: text,
  transition_key: text,
  terminal_reason: z.enum(TERMINAL_REASONS),
  error_code: text,
  record_version: num,
  envelope: DlqEnvelope,
  group_id: text.nullable(),
  signature: FailureSignatureJson.nullable(),
  created_at: time,
  published_at: time.nullable(),
  publish_attempts: num,
  publish_lease_until: time.nullable(),
  publish_error: text.nullable(),
}) satisfies z.ZodType<ExecutionDlqRow>;
/** A record is named by its tenant and execution id (`acme/order-2`), whatever else its row carries. */
export const RECORD_KEY = ['tenant_id', 'execution_id'] as const;
/** An envelope is named by its id alone (the DLQ API's cursor). */
export const DLQ_KEY = ['id'] as const;

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

export const ItemRejectColumns = z.object({
  id: num,
  tenant_id: text,
  execution_id: text,
  transition_key: text,
  ordinal: num,
  step: text,
  item_key: text.nullable(),
  error_code: text,
  reason: text,
  fingerprint: text,
  created_at: time,
}) satisfies z.ZodType<ItemRejectRow>;

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

export const CheckpointOutboxColumns = z.object({
  tenant_id: text,
  handoff_key: text,
  pipeline: text,
  records: z.array(anyJson),
  record_count: num,
  status: z.enum(CHECKPOINT_STATUSES),
  attempts: num,
  next_attempt_at: time,
  lease_owner: text.nullable(),
  lease_until: time.nullable(),
  last_error: text.nullable(),
  execution_id: text,
  created_at: time,
  admitted_at: time.nullable(),
}) satisfies z.ZodType<CheckpointOutboxRow>;

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

/**
 * execution_dispatch.workflow_args: what the admission asked the run to do (the dispatcher's
 * DispatchSpec). Null on rows from before the column held one: nothing asked.
 */
export const DispatchSpecJson = z.object({
  /** set by a re-drive: the operator attested the ambiguous call made no effect */
  redrive: z
    .object({
      redriveId: text,
      intent: z.enum(REDRIVE_MODES),
      /** the bulk re-drive job that admitted it (searchable as PipelineRedriveJob) */
      jobId: text.optional(),
      /** the runId of the run it re-drives, when the record knew it (searchable as PipelineRedriveOf) */
      redriveOf: text.optional(),
    })
    .optional(),
  /** a re-drive's principal and reason, for the run's details in the Temporal UI (not in the workflow's input) */
  by: z.object({ principal: text, reason: text }).optional(),
  /** the admitting request's trace context (traceparent), so a run the sweeper starts joins its trace */
  trace: z.record(z.string(), z.string()).optional(),
  /** a re-drive (or fork) with a corrected input: the paths it changed, for the run's summary and details (never a value) */
  correctedInput: z.object({ changedPaths: z.array(text) }).optional(),
  /** a fork: the execution and step it came from (searchable as PipelineForkedFrom) */
  forkedFrom: z.object({ executionId: text, stepIndex: num, version: num }).optional(),
});
export type DispatchSpec = z.output<typeof DispatchSpecJson>;

/** A row of `execution_dispatch`. */
export interface DispatchRow {
  tenant_id: string;
  execution_id: string;
  dispatch_id: string;
  status: 'PENDING' | 'STARTED';
  workflow_args: DispatchSpec | null;
  attempts: number;
  lease_owner: string | null;
  lease_until: Date | null;
  run_id: string | null;
  last_error: string | null;
  created_at: Date;
  started_at: Date | null;
}

export const ExecutionDispatchColumns = z.object({
  tenant_id: text,
  execution_id: text,
  dispatch_id: text,
  status: z.enum(['PENDING', 'STARTED']),
  workflow_args: DispatchSpecJson.nullable(),
  attempts: num,
  lease_owner: text.nullable(),
  lease_until: time.nullable(),
  run_id: text.nullable(),
  last_error: text.nullable(),
  created_at: time,
  started_at: time.nullable(),
}) satisfies z.ZodType<DispatchRow>;

/** A row of `execution_attempt`, the attempt log: one per committed step outcome (execution-store writes it, history reads it). */
export interface AttemptRow {
  step_index: number;
  /** the definition version the step ran under (null before versions) */
  pipeline_version: number | null;
  attempt: number;
  outcome: AttemptOutcome;
  error_code: string | null;
  run_id: string | null;
  version: number;
  /** the remote call the step parked on (execution_record.remote_call at the commit) */
  evidence: z.output<typeof RemoteCallSchema> | null;
  committed_at: Date;
}

export const ExecutionAttemptColumns = z.object({
  step_index: num,
  pipeline_version: num.nullable(),
  attempt: num,
  outcome: z.enum(ATTEMPT_OUTCOMES),
  error_code: text.nullable(),
  run_id: text.nullable(),
  version: num,
  evidence: RemoteCallSchema.nullable(),
  committed_at: time,
}) satisfies z.ZodType<AttemptRow>;

/** The columns of an execution_dispatch row that say its start. */
export interface DispatchStartColumns {
  dispatch_id: string;
  created_at: Date | string;
  attempts: number;
  last_error: string | null;
}
const DispatchStart = ExecutionDispatchColumns.pick({
  dispatch_id: true,
  created_at: true,
  attempts: true,
  last_error: true,
}) satisfies z.ZodType<DispatchStartColumns>;

/** An execution_dispatch row's start columns (checked) as a StartView. */
export function startView(value: unknown): StartView {
  const row = readRow('execution_dispatch', DispatchStart, value);
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

export const PipelineDefinitionColumns = z.object({
  pipeline: text,
  version: num,
  fingerprint: text,
  steps: z.array(text),
  shape: z.array(z.object({ name: text, transport: text, command: z.boolean() })).nullable(),
  created_at: time,
}) satisfies z.ZodType<PipelineDefinitionRow>;
