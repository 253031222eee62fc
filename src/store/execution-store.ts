/**
 * The ExecutionRecord mirror. Each committed state transition is one conditional
 * UPDATE whose WHERE names the transition it commits (current step, committed attempt,
 * status), so it bumps `version` exactly once: a repeated commit of the same transition
 * identity matches no row and changes nothing. Commits that touch a Command effect or
 * the DLQ do so in the same statement (one round trip, one transaction).
 */
import type { EffectStatus, ExecutionStatus, RedriveMode, TerminalReason } from '../spec-words';
import { failureGroup } from '../contract/failure-group';
import { randomUUID } from 'node:crypto';
import type { DlqEnvelope } from '../contract/dlq-envelope';
import { z } from 'zod';
import type { RemoteCallSchema } from '../contract/responses';
import type { Db, Queryable } from './db';
import { bool, num, readRow, readRows, text, time } from './columns';
import { named, namedComposed, type Placeholders } from './named-params';
import {
  ExecutionAttemptColumns,
  ExecutionDlqColumns,
  ExecutionRecordColumns,
  iso,
  isoOrNull,
  RECORD_KEY,
  RECORD_SELECT,
  startView,
  type ForkedFromColumn,
  type StartView,
} from './rows';

export type { EffectStatus, ExecutionStatus } from '../spec-words';

/** A run that found the record owned by another (or by none): what the store keeps of it. */
export interface ForeignRunNote {
  tenantId: string;
  executionId: string;
  runId: string;
  ownerRunId: string | null;
  recordStatus: string;
  reason: string;
}

export interface ExecutionRecord {
  tenantId: string;
  executionId: string;
  executionKey: string | null;
  pipeline: string;
  /** the pipeline definition version the execution is pinned to (admitted or re-driven under) */
  pipelineVersion: number;
  /** the shape fingerprint of that definition; null on records from before versions */
  definitionFingerprint: string | null;
  workflowId: string;
  status: ExecutionStatus;
  version: number;
  stepCount: number;
  currentStepIndex: number;
  attempt: number;
  failedStepIndex: number | null;
  segmentInput: unknown;
  nextDueAt: string | null;
  runId: string | null;
  redriveCount: number;
  correlationId: string | null;
  resourceType: string | null;
  resourceName: string | null;
  terminalReason: TerminalReason | null;
  lastErrorCode: string | null;
  lastErrorMessage: string | null;
  /** the call whose outcome is unknown, while REMOTE_OUTCOME_UNKNOWN */
  remoteCall: RemoteCall | null;
  /** a fork's lineage: the execution, step and record version it was forked from; null otherwise */
  forkedFrom: { executionId: string; stepIndex: number; version: number } | null;
  createdAt: string;
  updatedAt: string;
}

/** The call whose outcome is unknown (execution_record.remote_call): the contract's schema is its one definition. */
export type RemoteCall = z.output<typeof RemoteCallSchema>;

/**
 * What a worker's "in progress" answers (and deliveries that got no answer) for one transition
 * identity showed: set when the execution parked because the worker kept answering "in progress"
 * past the in-progress budget.
 */
export type InProgressEvidence = NonNullable<RemoteCall['inProgress']>;

export interface NewExecution {
  tenantId: string;
  executionId: string;
  executionKey: string | null;
  pipeline: string;
  /** the definition version the execution is pinned to; default 1 */
  pipelineVersion?: number;
  /** that definition's shape fingerprint */
  definitionFingerprint?: string | null;
  workflowId: string;
  stepCount: number;
  input: unknown;
  correlationId: string | null;
  resourceType: string | null;
  resourceName: string | null;
  /** a fork: the step it starts at (default 0), and its lineage and audit */
  fork?: { stepIndex: number; from: ForkedFromColumn };
}

/** execution_record's mapper: a row (every column checked, remote_call and forked_from parsed) as the record. */
export function toRecord(value: unknown): ExecutionRecord {
  const row = readRow('execution_record', ExecutionRecordColumns, value, RECORD_KEY);
  return {
    tenantId: row.tenant_id,
    executionId: row.execution_id,
    executionKey: row.execution_key,
    pipeline: row.pipeline,
    pipelineVersion: row.pipeline_version,
    definitionFingerprint: row.definition_fingerprint,
    workflowId: row.workflow_id,
    status: row.status,
    version: row.version,
    stepCount: row.step_count,
    currentStepIndex: row.current_step_index,
    attempt: row.attempt,
    failedStepIndex: row.failed_step_index,
    segmentInput: row.segment_input,
    nextDueAt: isoOrNull(row.next_due_at),
    runId: row.run_id,
    redriveCount: row.redrive_count,
    correlationId: row.correlation_id,
    resourceType: row.resource_type,
    resourceName: row.resource_name,
    terminalReason: row.terminal_reason,
    lastErrorCode: row.last_error_code,
    lastErrorMessage: row.last_error_message,
    remoteCall: row.remote_call,
    forkedFrom: row.forked_from ? { executionId: row.forked_from.executionId, stepIndex: row.forked_from.stepIndex, version: row.forked_from.version } : null,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

/** JSON parameters go as text with an explicit cast: pg would turn a JS array into a Postgres array. */
export const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value));

/** A start admitted whose run the store has not yet seen start (see ExecutionStore.pendingStart). */
export type PendingStart = StartView;

/** A dispatch row's lease, held by the process that will start its run. */
export interface DispatchLease {
  owner: string;
  ms: number;
}

export interface CommitResult {
  committed: boolean;
  version: number | null;
  /** the record's status after the commit */
  status: ExecutionStatus | null;
}

/**
 * The transition a step commit is for: the step and its committed attempt, and the run
 * that commits it. A commit moves the record only while it is RUNNING at exactly this step
 * and attempt, and (when `runId` is given) owned by that run.
 */
export interface StepKey {
  tenantId: string;
  executionId: string;
  stepIndex: number;
  attempt: number;
  /**
   * The committing run. The engine's activities always pass it: a run that does not own the
   * record (superseded by a re-drive, or a Reset's copy) can then never commit on it, whatever
   * path its delivery took. A record from before run ids were kept (RUNNING with none) is its run's.
   */
  runId?: string;
}

/** The inputs of `begin`: the run that takes the record, and (first step only) its dispatch row. */
export interface RunStart {
  tenantId: string;
  executionId: string;
  runId: string;
  dispatchId: string | null;
}

/** What a run last committed (`lastOutcomeOfRun`): a row of the execution's attempt log. */
export interface RunOutcome {
  stepIndex: number;
  attempt: number;
  outcome: 'SUCCEEDED' | 'RETRY_SCHEDULED' | 'FAILED' | 'REMOTE_OUTCOME_UNKNOWN';
  errorCode: string | null;
  /** of the DLQ envelope, when the outcome was FAILED */
  terminalReason: TerminalReason | null;
}

/** A terminal failure and the DLQ envelope committed with it. */
export interface TerminalFailure {
  terminalReason: TerminalReason;
  errorCode: string;
  errorMessage: string;
  transitionKey: string;
  /** the envelope's own fields; execution key, correlation and resource fields are added from the record */
  envelope: Omit<DlqEnvelope, 'executionKey' | 'correlationId' | 'resourceType' | 'resourceName'>;
  /** the failed step's name: part of the envelope's failure group */
  step: string;
}

/** Item rejects committed with a step's success (metadata only). */
export interface RejectBatch {
  transitionKey: string;
  step: string;
  items: PendingReject[];
}

/** One buffered item reject: metadata only, never the item. */
export interface PendingReject {
  itemKey: string | null;
  errorCode: string;
  reason: string;
  fingerprint: string;
}

/** How a step commit touches its Command effect, when the step is a Command. */
export interface EffectChange {
  status: EffectStatus;
  transitionKey: string;
  result?: unknown;
  errorCode?: string | null;
}

/**
 * Checks and writes composed onto a re-drive's admission statement, so they share its one round
 * trip and transaction (a bulk job's gate, store/job-gate.ts). `ctes` run first and define
 * `open`: the record moves only when `open` holds a row, and its `at` is the time the audit row
 * records. `after` are CTEs run with the move (they may read `moved` and `open`). `answer` adds
 * columns to the statement's one answer row, which `check` reads, throwing to refuse (then
 * nothing changed). Its values join the statement's named parameters (a shared name, the same value).
 */
export interface AdmissionGuard<G extends Record<string, unknown>> {
  values: G;
  ctes(p: Placeholders<G>): string;
  after(p: Placeholders<G>): string;
  answer(p: Placeholders<G>): string;
  check(row: unknown): void;
}

export class ExecutionStore {
  constructor(readonly db: Db) {}

  /**
   * Admission of a new execution: the QUEUED record (version 1) and its dispatch row, in
   * one statement (one round trip, one transaction). The dispatch row is born leased to
   * the admitting dispatcher, which starts the run right after. Returns null when the id
   * or the executionKey is taken.
   */
  async create(execution: NewExecution, dispatchSpec: unknown, lease: DispatchLease): Promise<ExecutionRecord | null> {
    // Replay-safe: a statement retried after its answer was lost finds its own row by this id.
    const admissionId = randomUUID();
    const inserted = await this.db.prepared(
      `WITH record AS (
         INSERT INTO execution_record (tenant_id, execution_id, execution_key, pipeline, workflow_id, status, version,
           step_count, current_step_index, attempt, segment_input, correlation_id, resource_type, resource_name, admission_id,
           pipeline_version, definition_fingerprint, forked_from)
         VALUES ($1, $2, $3, $4, $5, 'QUEUED', 1, $6, coalesce($17::integer, 0), 1, $7::jsonb, $8, $9, $10, $14, $15, $16, $18::jsonb)
         ON CONFLICT DO NOTHING RETURNING ${RECORD_SELECT}),
       dispatch AS (
         INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, attempts, lease_owner, lease_until)
         SELECT tenant_id, execution_id, 'start', $11::jsonb, 1, $12, now() + ($13::integer * interval '1 millisecond') FROM record)
       SELECT ${RECORD_SELECT} FROM record`,
      [
        execution.tenantId,
        execution.executionId,
        execution.executionKey,
        execution.pipeline,
        execution.workflowId,
        execution.stepCount,
        json(execution.input),
        execution.correlationId,
        execution.resourceType,
        execution.resourceName,
        json(dispatchSpec),
        lease.owner,
        lease.ms,
        admissionId,
        execution.pipelineVersion ?? 1,
        execution.definitionFingerprint ?? null,
        execution.fork?.stepIndex ?? null,
        execution.fork ? json(execution.fork.from) : null,
      ],
    );
    if (inserted.rowCount) return toRecord(inserted.rows[0]);
    // Taken: by someone else (null), or by this very admission whose first answer was lost.
    const own = await this.db.query('SELECT * FROM execution_record WHERE tenant_id = $1 AND execution_id = $2 AND admission_id = $3', [
      execution.tenantId,
      execution.executionId,
      admissionId,
    ]);
    return own.rowCount ? toRecord(own.rows[0]) : null;
  }

  /**
   * Whether a committed retry intent survives a crash: a Postgres with fsync on and
   * synchronous_commit not off, or PGlite on disk (not memory://). Read once.
   */
  async supportsDurableRetryIntent(): Promise<boolean> {
    this.durability ??= (async () => {
      if (this.db.kind === 'pglite') return !this.db.dataDir?.startsWith('memory://');
      const result = await this.db.query(`SELECT current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sync`);
      const settings = readRow('current_setting', z.object({ fsync: text, sync: text }), result.rows[0]);
      return settings.fsync === 'on' && settings.sync !== 'off';
    })();
    return this.durability;
  }
  private durability?: Promise<boolean>;

  /**
   * Admission of a re-drive, one statement: bump the version if it is still the expected
   * one and the status is the one the checks saw, re-queue at the resume step with a new
   * attempt, write the audit row and the dispatch row, and (for a confirmed
   * REMOTE_OUTCOME_UNKNOWN, or an attested IN_FLIGHT Command effect) turn the step's
   * AMBIGUOUS / IN_FLIGHT effect into FAILED_RETRYABLE.
   * Returns null when another writer got there first. `guard`: checks and writes composed onto
   * the statement, in its one round trip and transaction (a bulk job's gate: store/job-gate.ts);
   * it throws to refuse, and then nothing changed.
   */
  async admitRedrive<G extends Record<string, unknown> = Record<string, never>>(
    admission: {
      tenantId: string;
      executionId: string;
      expectedVersion: number;
      fromStatus: ExecutionStatus;
      resumeStepIndex: number;
      redriveId: string;
      principal: string;
      reason: string;
      request: unknown;
      /** the name of the step to resume (its Command effect is keyed by name) */
      resumeStepName: string;
      mode: RedriveMode;
      confirmedDisposition: string | null;
      dispatchSpec: unknown;
      releaseAmbiguousEffect: boolean;
      lease: DispatchLease;
      /** the bulk job that admits it, by name only: the audit row and the record say so (its gate, item and counts are the job's: store/job-gate.ts) */
      jobId?: string | null;
      /** the definition version the execution was pinned to when the checks read it */
      fromPipelineVersion: number;
      /** re-pin the execution to another definition (the audited opt-in); absent = keep the pinned one */
      definition?: { version: number; fingerprint: string; stepCount: number };
      /** a corrected input: it becomes the persisted segment input of the resumed step, and `audit` goes into the audit row's `repair` */
      correction?: { input: unknown; audit: unknown } | null;
    },
    guard?: AdmissionGuard<G>,
  ): Promise<ExecutionRecord | null> {
    const a = admission;
    const values = {
      tenantId: a.tenantId,
      executionId: a.executionId,
      expectedVersion: a.expectedVersion,
      fromStatus: a.fromStatus,
      resumeStepIndex: a.resumeStepIndex,
      resumeStepName: a.resumeStepName,
      redriveId: a.redriveId,
      principal: a.principal,
      reason: a.reason,
      request: json(a.request),
      mode: a.mode,
      confirmedDisposition: a.confirmedDisposition,
      dispatchSpec: json(a.dispatchSpec),
      releaseAmbiguousEffect: a.releaseAmbiguousEffect,
      leaseOwner: a.lease.owner,
      leaseMs: a.lease.ms,
      jobId: a.jobId ?? null,
      fromPipelineVersion: a.fromPipelineVersion,
      toVersion: a.definition?.version ?? null,
      toFingerprint: a.definition?.fingerprint ?? null,
      toStepCount: a.definition?.stepCount ?? null,
      repair: a.correction ? json(a.correction.audit) : null,
      correctedInput: a.correction ? json(a.correction.input ?? null) : null,
    };
    const text = (p: Placeholders<typeof values>, g?: Placeholders<G>) =>
      `WITH ${guard ? `${guard.ctes(g!)},` : ''}
       moved AS (
         UPDATE execution_record SET version = version + 1, status = 'QUEUED', current_step_index = ${p.resumeStepIndex}, attempt = attempt + 1,
           failed_step_index = NULL, terminal_reason = NULL, next_due_at = NULL, run_id = NULL, remote_call = NULL, dispatch_id = ${p.redriveId},
           redrive_count = redrive_count + 1, updated_at = now(),
           pipeline_version = COALESCE(${p.toVersion}, pipeline_version), definition_fingerprint = COALESCE(${p.toFingerprint}, definition_fingerprint),
           step_count = COALESCE(${p.toStepCount}, step_count), redrive_job_id = ${p.jobId},
           segment_input = CASE WHEN ${p.repair}::jsonb IS NULL THEN segment_input ELSE ${p.correctedInput}::jsonb END
         WHERE tenant_id = ${p.tenantId} AND execution_id = ${p.executionId} AND version = ${p.expectedVersion} AND status = ${p.fromStatus}
           ${guard ? 'AND EXISTS (SELECT 1 FROM open)' : ''}
         RETURNING ${RECORD_SELECT}),
       audit AS (
         INSERT INTO redrive_audit (tenant_id, execution_id, redrive_id, principal, reason, request, mode, from_status,
           from_version, to_version, resume_step_index, attempt, confirmed_disposition, job_id, from_pipeline_version, to_pipeline_version,
           created_at, repair)
         SELECT tenant_id, execution_id, ${p.redriveId}, ${p.principal}, ${p.reason}, ${p.request}::jsonb, ${p.mode}, ${p.fromStatus}, ${p.expectedVersion},
           version, current_step_index, attempt, ${p.confirmedDisposition}, ${p.jobId}, ${p.fromPipelineVersion}, pipeline_version,
           ${guard ? 'coalesce((SELECT at FROM open), now())' : 'now()'}, ${p.repair}::jsonb FROM moved),
       dispatch AS (
         INSERT INTO execution_dispatch (tenant_id, execution_id, dispatch_id, workflow_args, attempts, lease_owner, lease_until)
         SELECT tenant_id, execution_id, ${p.redriveId}, ${p.dispatchSpec}::jsonb, 1, ${p.leaseOwner},
           now() + (${p.leaseMs}::integer * interval '1 millisecond') FROM moved),
       effect AS (
         UPDATE command_effect SET status = 'FAILED_RETRYABLE', updated_at = now()
         WHERE ${p.releaseAmbiguousEffect}::boolean AND tenant_id = ${p.tenantId} AND execution_id = ${p.executionId}
           AND step_name = ${p.resumeStepName} AND status IN ('AMBIGUOUS', 'IN_FLIGHT') AND EXISTS (SELECT 1 FROM moved))
       ${
         guard
           ? `, ${guard.after(g!)}
       SELECT ${RECORD_SELECT}, ${guard.answer(g!)} FROM (SELECT 1) AS one LEFT JOIN moved ON true`
           : `SELECT ${RECORD_SELECT} FROM moved`
       }`;
    const statement = guard ? namedComposed(values, guard.values, text) : named(values, (p) => text(p));
    // Prepared: the longest statement the store sends often (each re-drive), so the one whose parsing and planning cost most.
    const result = await this.db.prepared(statement.text, statement.params);
    guard?.check(result.rows[0]);
    if (result.rowCount && readRow('execution_record', MovedColumn, result.rows[0]).execution_id !== null) return toRecord(result.rows[0]);
    // Not moved: another writer got there first (null), or this admission's own first answer was lost (its audit row says so).
    const own = await this.db.query(
      `SELECT r.*, a.to_version AS admitted_version, a.attempt AS admitted_attempt FROM redrive_audit a
       JOIN execution_record r ON r.tenant_id = a.tenant_id AND r.execution_id = a.execution_id
       WHERE a.tenant_id = $1 AND a.execution_id = $2 AND a.redrive_id = $3`,
      [a.tenantId, a.executionId, a.redriveId],
    );
    if (!own.rowCount) return null;
    const admitted = readRow('redrive_audit', AdmittedColumns, own.rows[0]);
    return { ...toRecord(own.rows[0]), version: admitted.admitted_version, attempt: admitted.admitted_attempt, currentStepIndex: a.resumeStepIndex };
  }

  /**
   * A start (or re-drive) the store admitted whose run it has not yet seen start: a PENDING
   * dispatch row, oldest first, or null. `scope: 'queued-for'` reads only the dispatch the record
   * waits for (an older dispatch's row may outlive it; a record without one, written by an older
   * release, reads any). A row stays PENDING until Temporal's
   * answer to a swept start or the run's first step marks it, so a healthy start shows here for
   * up to the dispatch lease (30 s) and a sweep under a backlog; one that stays names why in `lastError`.
   */
  async pendingStart(tenantId: string, executionId: string, scope: 'any' | 'queued-for' = 'any'): Promise<PendingStart | null> {
    const result = await this.db.query(
      `SELECT dispatch_id, created_at, attempts, last_error FROM execution_dispatch
       WHERE tenant_id = $1 AND execution_id = $2 AND status = 'PENDING'
         AND (NOT $3::boolean OR dispatch_id = coalesce((SELECT r.dispatch_id FROM execution_record r WHERE r.tenant_id = $1 AND r.execution_id = $2), dispatch_id))
       ORDER BY created_at LIMIT 1`,
      [tenantId, executionId, scope === 'queued-for'],
    );
    return result.rows[0] ? startView(result.rows[0]) : null;
  }

  async get(tenantId: string, executionId: string, q: Queryable = this.db): Promise<ExecutionRecord | null> {
    // Prepared on the store's own pool (a step's retry and every re-drive read it); as is inside a transaction.
    const sql = `SELECT ${RECORD_SELECT} FROM execution_record WHERE tenant_id = $1 AND execution_id = $2`;
    const result = await (q === this.db ? this.db.prepared(sql, [tenantId, executionId]) : q.query(sql, [tenantId, executionId]));
    return result.rowCount ? toRecord(result.rows[0]) : null;
  }

  /**
   * Of these runs Temporal closed (terminated, cancelled, timed out), the ones that still own
   * their record, and where each left it: RUNNING under that run, or QUEUED for the dispatch
   * that started it (the run ended before its first step took the record). A record another
   * run owns, or one that has ended, is left out: a QUEUED record whose last run is this one but
   * whose dispatch is newer was re-driven. One statement for a page of runs.
   */
  async unfinishedOfRuns<R extends { tenantId: string; executionId: string; runId: string }>(
    runs: R[],
  ): Promise<(R & { stepIndex: number; dispatchId?: string })[]> {
    if (runs.length === 0) return [];
    const result = await this.db.query(
      `SELECT c.i, r.current_step_index, r.status, r.dispatch_id
       FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS c(tenant_id, execution_id, run_id, i)
       JOIN execution_record r ON r.tenant_id = c.tenant_id AND r.execution_id = c.execution_id
       WHERE (r.status = 'RUNNING' AND r.run_id = c.run_id)
          OR (r.status = 'QUEUED' AND EXISTS (SELECT 1 FROM execution_dispatch d WHERE d.tenant_id = r.tenant_id AND d.execution_id = r.execution_id
                                                AND d.dispatch_id = r.dispatch_id AND d.status = 'STARTED' AND d.run_id = c.run_id))`,
      [runs.map((r) => r.tenantId), runs.map((r) => r.executionId), runs.map((r) => r.runId)],
    );
    return readRows('execution_record', UnfinishedColumns, result.rows).map((row) => ({
      ...runs[row.i - 1],
      stepIndex: row.current_step_index,
      ...(row.status === 'QUEUED' && row.dispatch_id !== null ? { dispatchId: row.dispatch_id } : {}),
    }));
  }

  /** The listed executions' records, in one statement (missing ones are absent). */
  async getMany(tenantId: string, executionIds: string[]): Promise<Map<string, ExecutionRecord>> {
    const result = await this.db.query('SELECT * FROM execution_record WHERE tenant_id = $1 AND execution_id = ANY($2::text[])', [tenantId, executionIds]);
    return new Map(result.rows.map(toRecord).map((record) => [record.executionId, record]));
  }

  async getByKey(tenantId: string, executionKey: string): Promise<ExecutionRecord | null> {
    const result = await this.db.query('SELECT * FROM execution_record WHERE tenant_id = $1 AND execution_key = $2', [tenantId, executionKey]);
    return result.rowCount ? toRecord(result.rows[0]) : null;
  }

  /** Newest first, keyset-paged on (created_at, execution_id). */
  async list(tenantId: string, options: { status?: ExecutionStatus; limit: number; after?: { createdAt: string; executionId: string } }) {
    const params: unknown[] = [tenantId, options.limit + 1];
    let where = 'tenant_id = $1';
    if (options.status) {
      params.push(options.status);
      where += ` AND status = $${params.length}`;
    }
    if (options.after) {
      params.push(options.after.createdAt, options.after.executionId);
      where += ` AND (created_at, execution_id) < ($${params.length - 1}::timestamptz, $${params.length})`;
    }
    const result = await this.db.query(`SELECT * FROM execution_record WHERE ${where} ORDER BY created_at DESC, execution_id DESC LIMIT $2`, params);
    const records = result.rows.map(toRecord);
    return { records: records.slice(0, options.limit), more: records.length > options.limit };
  }

  /**
   * Called by the first step of a run and by every Temporal retry of a step: moves a
   * QUEUED record to RUNNING (a committed transition) and returns the committed state,
   * whose `attempt` is the one a redelivered step must reuse. The first step also marks
   * its dispatch row STARTED, in the same statement. Only a run of the record's own dispatch
   * row (still PENDING, or STARTED by this very run) takes a QUEUED record: a run the
   * orchestrator did not start (a Reset in the Temporal UI, a duplicate start) never does,
   * and finds the record as it is, owned by another run. The row must be the one the record
   * is queued for (`dispatch_id`): a run of an earlier dispatch, whose first step Temporal
   * delivers again after the record was re-driven, never takes it, even once the re-drive's
   * row is STARTED.
   */
  async begin({ tenantId, executionId, runId, dispatchId }: RunStart): Promise<ExecutionRecord | null> {
    const result = await this.db.prepared(
      `WITH moved AS (
         UPDATE execution_record SET status = 'RUNNING', version = version + 1, run_id = $3, updated_at = now()
         WHERE tenant_id = $1 AND execution_id = $2 AND status = 'QUEUED' AND dispatch_id = $4
           AND EXISTS (SELECT 1 FROM execution_dispatch d WHERE d.tenant_id = $1 AND d.execution_id = $2 AND d.dispatch_id = $4
                       AND (d.status = 'PENDING' OR d.run_id = $3))
         RETURNING ${RECORD_SELECT}),
       started AS (
         UPDATE execution_dispatch SET status = 'STARTED', run_id = $3, started_at = now(), lease_owner = NULL, lease_until = NULL
         WHERE tenant_id = $1 AND execution_id = $2 AND dispatch_id = $4 AND status = 'PENDING' AND EXISTS (SELECT 1 FROM moved))
       SELECT ${RECORD_SELECT} FROM moved
       UNION ALL
       SELECT ${RECORD_SELECT} FROM execution_record WHERE tenant_id = $1 AND execution_id = $2 AND NOT EXISTS (SELECT 1 FROM moved)`,
      [tenantId, executionId, runId, dispatchId],
    );
    return result.rowCount ? toRecord(result.rows[0]) : null;
  }

  /**
   * The last outcome a run committed (its attempt log's newest row), with the terminal reason
   * of its DLQ envelope when it ended FAILED; null when the run committed nothing. A run that
   * no longer owns its record reads this to end as it committed.
   */
  async lastOutcomeOfRun({ tenantId, executionId, runId }: { tenantId: string; executionId: string; runId: string | null }): Promise<RunOutcome | null> {
    const result = await this.db.query(
      `SELECT a.step_index, a.attempt, a.outcome, a.error_code, d.terminal_reason
       FROM execution_attempt a
       LEFT JOIN execution_dlq d ON d.tenant_id = a.tenant_id AND d.execution_id = a.execution_id AND d.record_version = a.version
       WHERE a.tenant_id = $1 AND a.execution_id = $2 AND ${runId === null ? 'a.run_id IS NULL' : 'a.run_id = $3'}
       ORDER BY a.version DESC LIMIT 1`,
      runId === null ? [tenantId, executionId] : [tenantId, executionId, runId],
    );
    const row = result.rows[0] && readRow('execution_attempt', LastOutcomeColumns, result.rows[0]);
    return row
      ? { stepIndex: row.step_index, attempt: row.attempt, outcome: row.outcome, errorCode: row.error_code, terminalReason: row.terminal_reason }
      : null;
  }

  /** Notes a run the orchestrator did not start, refused by its first step (once per run); the history shows it. */
  /**
   * Notes, before a remote step's request goes out, that a delivery of this transition identity
   * is being sent. `earlier`: a delivery of it was noted before (by another Temporal attempt, a
   * run that died, a replay): the worker may already have it, whatever this delivery meets.
   */
  async noteRemoteDelivery({ tenantId, executionId, stepIndex, attempt }: Omit<StepKey, 'runId'>): Promise<{ earlier: boolean; firstSentAt: string }> {
    const result = await this.db.prepared(
      `WITH noted AS (
         INSERT INTO remote_delivery (tenant_id, execution_id, step_index, attempt) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING RETURNING first_sent_at)
       SELECT false AS earlier, first_sent_at FROM noted
       UNION ALL
       SELECT true, first_sent_at FROM remote_delivery
       WHERE tenant_id = $1 AND execution_id = $2 AND step_index = $3 AND attempt = $4 AND NOT EXISTS (SELECT 1 FROM noted)`,
      [tenantId, executionId, stepIndex, attempt],
    );
    const row = readRow('remote_delivery', NotedColumns, result.rows[0]);
    return { earlier: row.earlier, firstSentAt: iso(row.first_sent_at) };
  }

  /**
   * The attempts of a step whose delivery was ever sent (noteRemoteDelivery), with when, newest
   * first, at most `limit`. Attempts from before deliveries were noted have no row.
   */
  async remoteDeliveries(tenantId: string, executionId: string, stepIndex: number, limit = 20): Promise<{ attempt: number; firstSentAt: string }[]> {
    const result = await this.db.query(
      `SELECT attempt, first_sent_at FROM remote_delivery WHERE tenant_id = $1 AND execution_id = $2 AND step_index = $3 ORDER BY attempt DESC LIMIT $4`,
      [tenantId, executionId, stepIndex, limit],
    );
    return readRows('remote_delivery', RemoteDeliveryColumns, result.rows).map((row) => ({
      attempt: row.attempt,
      firstSentAt: iso(row.first_sent_at),
    }));
  }

  async noteForeignRun(note: ForeignRunNote): Promise<void> {
    await this.db.query(
      `INSERT INTO execution_foreign_run (tenant_id, execution_id, run_id, owner_run_id, record_status, reason)
       SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM execution_record WHERE tenant_id = $1 AND execution_id = $2)
       ON CONFLICT DO NOTHING`,
      [note.tenantId, note.executionId, note.runId, note.ownerRunId, note.recordStatus, note.reason],
    );
  }

  /** Step succeeded: move to the next step (or SUCCEEDED), its output becomes the segment input. */
  commitSucceeded(change: SucceededChange) {
    return this.run(this.succeeded(change));
  }

  /**
   * What one success commit costs Postgres, from EXPLAIN (ANALYZE, BUFFERS) of the very
   * statement `commitSucceeded` sends, rolled back: the writes it makes (its CTEs), the
   * trigger calls they fire and the buffers they touch. Counts, not times: the benchmark
   * smoke holds them under a recorded bound.
   */
  async explainSucceeded(change: SucceededChange): Promise<CommitCost> {
    const { sql, values } = this.succeeded(change);
    let plan: ExplainedPlan | undefined;
    await this.db
      .transaction(async (tx) => {
        const result = await tx.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, values);
        plan = readRow('EXPLAIN', ExplainColumns, result.rows[0])['QUERY PLAN'][0];
        throw ROLLBACK;
      })
      .catch((err) => {
        if (err !== ROLLBACK) throw err;
      });
    return commitCost(plan!);
  }

  private succeeded({ output, effect, rejects, ...key }: SucceededChange): Statement {
    return this.statement(
      key,
      `version = version + 1, current_step_index = current_step_index + 1, segment_input = $5::jsonb,
       attempt = CASE WHEN current_step_index + 1 >= step_count THEN attempt ELSE 1 END,
       status = CASE WHEN current_step_index + 1 >= step_count THEN 'SUCCEEDED' ELSE 'RUNNING' END,
       next_due_at = NULL, last_error_code = NULL, last_error_message = NULL`,
      [json(output)],
      effect,
      rejects &&
        ((p) => `, rejects AS (
         INSERT INTO item_reject (tenant_id, execution_id, transition_key, ordinal, step, item_key, error_code, reason, fingerprint)
         SELECT moved.tenant_id, moved.execution_id, $${p(rejects.transitionKey)}, r.ordinal, $${p(rejects.step)}, r.item_key, r.error_code, r.reason, r.fingerprint
         FROM moved, jsonb_to_recordset($${p(json(rejects.items.map((item, ordinal) => ({ ordinal, item_key: item.itemKey, error_code: item.errorCode, reason: item.reason, fingerprint: item.fingerprint }))))}::jsonb)
           AS r(ordinal integer, item_key text, error_code text, reason text, fingerprint text)
         ON CONFLICT DO NOTHING)`),
    );
  }

  /** Retryable failure with budget left: commit the retry intent (next attempt, nextDueAt) before the wait. */
  commitRetry({
    delayMs,
    errorCode,
    errorMessage,
    effect,
    ...key
  }: StepKey & { delayMs: number; errorCode: string; errorMessage: string; effect?: EffectChange }) {
    return this.commit(
      key,
      `version = version + 1, attempt = attempt + 1, next_due_at = now() + ($5::integer * interval '1 millisecond'),
       last_error_code = $6, last_error_message = $7`,
      [delayMs, errorCode, errorMessage],
      effect,
    );
  }

  /**
   * Terminal failure: record FAILED with the failed step (its segment input is already
   * the stored one) and the DLQ envelope appended, in one statement. The envelope's
   * execution/correlation fields come from the record itself.
   */
  async commitFailed({ failure, effect, ...key }: StepKey & { failure: TerminalFailure; effect?: EffectChange }): Promise<CommitResult> {
    const group = failureGroup({ ...failure, transport: String(failure.envelope.transport) });
    return this.commit(
      key,
      `version = version + 1, status = 'FAILED', failed_step_index = current_step_index, terminal_reason = $5,
       last_error_code = $6, last_error_message = $7, next_due_at = NULL`,
      [failure.terminalReason, failure.errorCode, failure.errorMessage],
      effect,
      (p) => `, dlq AS (
         INSERT INTO execution_dlq (tenant_id, execution_id, transition_key, terminal_reason, error_code, record_version, envelope, group_id, signature)
         SELECT tenant_id, execution_id, $${p(failure.transitionKey)}, terminal_reason, last_error_code, version,
           $${p(json(failure.envelope))}::jsonb || jsonb_build_object('executionKey', execution_key, 'correlationId', correlation_id,
             'resourceType', resource_type, 'resourceName', resource_name, 'pipeline', pipeline, 'pipelineVersion', pipeline_version),
           $${p(group.groupId)}, $${p(json(group.signature))}::jsonb
         FROM moved
         ON CONFLICT DO NOTHING RETURNING id)`,
    );
  }

  /** A remote call's outcome is unknown: park the execution; no retry, no DLQ entry. */
  commitOutcomeUnknown({
    errorCode,
    errorMessage,
    remoteCall,
    effect,
    ...key
  }: StepKey & { errorCode: string; errorMessage: string; remoteCall: RemoteCall; effect?: EffectChange }) {
    return this.commit(
      key,
      `version = version + 1, status = 'REMOTE_OUTCOME_UNKNOWN', failed_step_index = current_step_index,
       terminal_reason = NULL, last_error_code = $5, last_error_message = $6, next_due_at = NULL, remote_call = $7::jsonb`,
      [errorCode, errorMessage, json(remoteCall)],
      effect,
    );
  }

  /**
   * One conditional UPDATE of the record, plus (same statement) the Command effect,
   * the attempt log row (the execution's story, derived from the moved row) and any
   * extra CTE. Only a RUNNING record at this step and attempt, owned by the committing run,
   * moves.
   */
  private commit(
    key: StepKey,
    set: string,
    params: unknown[],
    effect: EffectChange | undefined,
    extra?: (push: (value: unknown) => number) => string,
  ): Promise<CommitResult> {
    return this.run(this.statement(key, set, params, effect, extra));
  }

  private statement(
    key: StepKey,
    set: string,
    params: unknown[],
    effect: EffectChange | undefined,
    extra?: (push: (value: unknown) => number) => string,
  ): Statement {
    const values = [key.tenantId, key.executionId, key.stepIndex, key.attempt, ...params];
    const push = (value: unknown) => values.push(value);
    // One more column of the row the UPDATE already locks: no extra read, no extra round trip.
    const ownedByRun = key.runId === undefined ? '' : ` AND (run_id = $${push(key.runId)} OR run_id IS NULL)`;
    let ctes = `WITH moved AS (
        UPDATE execution_record SET ${set}, updated_at = now()
        WHERE tenant_id = $1 AND execution_id = $2 AND current_step_index = $3 AND attempt = $4 AND status = 'RUNNING'${ownedByRun}
        RETURNING *),
      attempt_log AS (
        INSERT INTO execution_attempt (tenant_id, execution_id, step_index, attempt, outcome, error_code, run_id, version, evidence, pipeline_version)
        SELECT tenant_id, execution_id, $3, $4,
          CASE WHEN status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN status WHEN current_step_index > $3 THEN 'SUCCEEDED' ELSE 'RETRY_SCHEDULED' END,
          CASE WHEN current_step_index > $3 THEN NULL ELSE last_error_code END, run_id, version, remote_call, pipeline_version
        FROM moved)`;
    if (effect) {
      ctes += `, effect AS (
        UPDATE command_effect SET status = $${push(effect.status)}, result = $${push(json(effect.result))}::jsonb,
          error_code = $${push(effect.errorCode ?? null)}, updated_at = now()
        WHERE tenant_id = $1 AND execution_id = $2 AND step_index = $3 AND transition_key = $${push(effect.transitionKey)}
          AND EXISTS (SELECT 1 FROM moved)
        RETURNING 1)`;
    }
    if (extra) ctes += extra(push);
    return { sql: `${ctes} SELECT version, status FROM moved`, values };
  }

  private async run({ sql, values }: Statement): Promise<CommitResult> {
    // Prepared: a step's commit is the statement the store sends most (its result columns are named).
    const result = await this.db.prepared(sql, values);
    const moved = result.rows[0] === undefined ? null : readRow('execution_record', CommittedColumns, result.rows[0]);
    return { committed: result.rowCount > 0, version: moved?.version ?? null, status: moved?.status ?? null };
  }
}

interface Statement {
  sql: string;
  values: unknown[];
}

type SucceededChange = StepKey & { output: unknown; effect?: EffectChange; rejects?: RejectBatch };

/** What one commit statement did in Postgres (EXPLAIN ANALYZE of it, rolled back). */
export interface CommitCost {
  /** rows-writing parts of the statement (the record UPDATE, the attempt log INSERT, …) */
  writes: number;
  /** trigger calls those writes fired, by trigger */
  triggers: Record<string, number>;
  triggerCalls: number;
  /** shared buffers the statement hit or read (its own plan nodes; trigger bodies not included) */
  sharedBuffers: number;
}

interface ExplainedNode {
  'Node Type': string;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: ExplainedNode[];
}
interface ExplainedPlan {
  Plan: ExplainedNode;
  Triggers?: { 'Trigger Name': string; Calls: number }[];
}

const ExplainedNodeJson: z.ZodType<ExplainedNode> = z.lazy(() =>
  z.object({
    'Node Type': text,
    'Shared Hit Blocks': num.optional(),
    'Shared Read Blocks': num.optional(),
    Plans: z.array(ExplainedNodeJson).optional(),
  }),
);
const ExplainedPlans = z.array(
  z.object({ Plan: ExplainedNodeJson, Triggers: z.array(z.object({ 'Trigger Name': text, Calls: num })).optional() }),
) satisfies z.ZodType<ExplainedPlan[]>;
/** EXPLAIN (FORMAT JSON)'s one row: its plan as JSON (pg) or as JSON text (PGlite). */
const ExplainColumns = z.object({
  'QUERY PLAN': z.union([
    ExplainedPlans,
    z
      .string()
      .transform((plan) => JSON.parse(plan))
      .pipe(ExplainedPlans),
  ]),
});

/** remote_delivery's columns the store reads (its key's tenant, execution and step are the query's). */
const RemoteDeliveryColumns = z.object({ attempt: num, first_sent_at: time });
/** A delivery noted, and whether one of its transition identity was noted before. */
const NotedColumns = RemoteDeliveryColumns.pick({ first_sent_at: true }).extend({ earlier: bool });
/** What a step commit answers of the record it moved. */
const CommittedColumns = ExecutionRecordColumns.pick({ version: true, status: true });

/** Whether a guarded admission moved the record (its answer row is there either way). */
const MovedColumn = z.object({ execution_id: text.nullable() });
/** A re-drive's own audit row, found again after its answer was lost. */
const AdmittedColumns = z.object({ admitted_version: num, admitted_attempt: num });
const UnfinishedColumns = ExecutionRecordColumns.pick({ current_step_index: true, status: true }).extend({ i: num, dispatch_id: text.nullable() });
const LastOutcomeColumns = ExecutionAttemptColumns.pick({ step_index: true, attempt: true, outcome: true, error_code: true }).extend({
  terminal_reason: ExecutionDlqColumns.shape.terminal_reason.nullable(),
});

const ROLLBACK = Symbol('rollback');

function commitCost(plan: ExplainedPlan): CommitCost {
  const writes = (node: ExplainedNode): number =>
    (node['Node Type'] === 'ModifyTable' ? 1 : 0) + (node.Plans ?? []).reduce((sum, child) => sum + writes(child), 0);
  const triggers: Record<string, number> = {};
  for (const trigger of plan.Triggers ?? []) triggers[trigger['Trigger Name']] = (triggers[trigger['Trigger Name']] ?? 0) + trigger.Calls;
  return {
    writes: writes(plan.Plan),
    triggers,
    triggerCalls: Object.values(triggers).reduce((sum, n) => sum + n, 0),
    sharedBuffers: (plan.Plan['Shared Hit Blocks'] ?? 0) + (plan.Plan['Shared Read Blocks'] ?? 0),
  };
}
