/**
 * Bulk re-drive jobs (`redrive_job`) and their items (`redrive_job_item`). The job row is
 * its own start outbox: written with its items in one transaction, its workflow started
 * after commit, and `unstarted()` finds any whose start was lost. An item turns ADMITTED
 * in the re-drive's own admission statement (the job's gate composed onto it: store/job-gate.ts) and SKIPPED
 * here, each only from SELECTED: the primary key and that condition make "at most once
 * per job". Status changes are conditional on the status they leave.
 */
import { z } from 'zod';
import { JobControlEntrySchema } from '../contract/responses';
import { EXECUTION_STATUSES, JOB_ITEM_STATES, REDRIVE_JOB_STATUSES, type JobControlAction, type RedriveJobStatus } from '../spec-words';
import type { Db, Queryable } from './db';
import { anyJson, countsByCode, num, readRow, readRows, text, time } from './columns';
import { UNREDRIVEN_FROM, unredrivenWhere, type EnvelopeFilter } from './failure-group-store';
import { ExecutionRecordColumns, iso, isoOrNull } from './rows';

export type { RedriveJobStatus } from '../spec-words';
/** `halt` and `fail` are the system's own (principal `system`). */
export type RedriveJobAction = JobControlAction;

export interface ControlEntry {
  action: RedriveJobAction;
  principal: string;
  at: string;
  reason?: string;
}

/** What a job yielding to live traffic last wrote (workflows/redrive-job-policy.ts, Yield): its rate now and the admission times it steers by. */
export interface JobYielding {
  rate: number;
  quietestMs: number | null;
  latestMs: number | null;
  /** when it was written */
  at: string;
}

/** A row of `redrive_job`. */
interface RedriveJobRow {
  tenant_id: string;
  job_id: string;
  status: RedriveJobStatus;
  principal: string;
  reason: string;
  request: unknown;
  batch_size: number;
  rate_per_second: number;
  canary: number | null;
  halt_reason: string | null;
  failure_reason: string | null;
  control_log: ControlEntry[];
  workflow_started_at: Date | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  excluded: Record<string, number>;
  halt_on: unknown;
  selected: number;
  yielding: JobYielding | null;
}

/**
 * redrive_job's columns; its JSON parsed: the control log with the contract's schema, the
 * excluded counts and yielding with the job's own. `request` and `halt_on` are whatever the
 * job was created with (the store takes them as given): the service parses them with the
 * request schemas on read (service/redrive-job-request.ts parseJob).
 */
export const RedriveJobColumns = z.object({
  tenant_id: text,
  job_id: text,
  status: z.enum(REDRIVE_JOB_STATUSES),
  principal: text,
  reason: text,
  request: anyJson,
  batch_size: num,
  rate_per_second: num,
  canary: num.nullable(),
  halt_reason: text.nullable(),
  failure_reason: text.nullable(),
  control_log: z.array(JobControlEntrySchema),
  workflow_started_at: time.nullable(),
  created_at: time,
  updated_at: time,
  finished_at: time.nullable(),
  excluded: countsByCode,
  halt_on: anyJson,
  selected: num,
  yielding: z.object({ rate: num, quietestMs: num.nullable(), latestMs: num.nullable(), at: text }).nullable(),
}) satisfies z.ZodType<RedriveJobRow>;

/** redrive_job_item's columns. */
export const RedriveJobItemColumns = z.object({
  tenant_id: text,
  job_id: text,
  execution_id: text,
  ordinal: num,
  expected_version: num,
  state: z.enum(JOB_ITEM_STATES),
  skip_code: text.nullable(),
  redrive_id: text.nullable(),
  admission_attempts: num,
  processed_at: time.nullable(),
});

/** redrive_job_count's rows summed per job (with the job's `selected`), `skipped_by_code` of each shard aggregated. */
export const JobCountColumns = z.object({
  job_id: text,
  selected: num,
  admitted: num,
  skipped: num,
  codes: z.array(countsByCode.nullable()),
  succeeded: num,
  failed_again: num,
  remote_outcome_unknown: num,
  first_at: time.nullable(),
  last_at: time.nullable(),
  last_admitted_at: time.nullable(),
});

/** redrive_job_item grouped by state and skip code, with the admitted items' execution status now (null: not admitted). */
const ItemRecountColumns = RedriveJobItemColumns.pick({ state: true, skip_code: true }).extend({
  status: z.enum(EXECUTION_STATUSES).nullable(),
  n: num,
  first_at: time.nullable(),
  last_at: time.nullable(),
});

/** What a selection reads of execution_record. */
const SelectedColumns = ExecutionRecordColumns.pick({ execution_id: true, version: true, status: true });

export interface RedriveJob {
  tenantId: string;
  jobId: string;
  status: RedriveJobStatus;
  principal: string;
  reason: string;
  /** the request body as accepted */
  request: unknown;
  batchSize: number;
  ratePerSecond: number;
  canary: number | null;
  haltOn: unknown;
  haltReason: string | null;
  /** why a FAILED job could not go on */
  failureReason: string | null;
  controlLog: ControlEntry[];
  started: boolean;
  excluded: Record<string, number>;
  selected: number;
  /** the rate a job yielding to live traffic allows itself, and why (JobYielding); null while the asked rate holds */
  yielding: unknown;
  createdAt: string;
  updatedAt: string;
  finishedAt: string | null;
}

/** redrive_job's mapper: a row (every column checked, its JSON parsed) as the job. */
export function toJob(value: unknown): RedriveJob {
  const row = readRow('redrive_job', RedriveJobColumns, value);
  return {
    tenantId: row.tenant_id,
    jobId: row.job_id,
    status: row.status,
    principal: row.principal,
    reason: row.reason,
    request: row.request,
    batchSize: row.batch_size,
    ratePerSecond: row.rate_per_second,
    canary: row.canary,
    haltOn: row.halt_on,
    haltReason: row.halt_reason,
    failureReason: row.failure_reason,
    controlLog: row.control_log,
    started: row.workflow_started_at !== null,
    excluded: row.excluded,
    selected: row.selected,
    yielding: row.yielding,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    finishedAt: isoOrNull(row.finished_at),
  };
}

/** An execution a selection found, with the version it stood at then. */
export interface SelectedItem {
  executionId: string;
  expectedVersion: number;
}

export interface Selection {
  items: SelectedItem[];
  /** left out, by why: REMOTE_OUTCOME_UNKNOWN, EXECUTION_NOT_FOUND */
  excluded: Record<string, number>;
}

/** Where a job's items stand: processed ones by state and skip code, admitted ones by their execution's status now. */
export interface JobCounts {
  selected: number;
  remaining: number;
  admitted: number;
  skipped: number;
  skippedByCode: Record<string, number>;
  succeeded: number;
  failedAgain: number;
  remoteOutcomeUnknown: number;
  running: number;
  firstProcessedAt: string | null;
  lastProcessedAt: string | null;
  /** when the job's latest admission was made (its admission statement's time) */
  lastAdmittedAt: string | null;
}

/** A job as created: the fields it is asked with, and its selection. */
export type NewRedriveJob = Pick<
  RedriveJob,
  'tenantId' | 'jobId' | 'principal' | 'reason' | 'request' | 'batchSize' | 'ratePerSecond' | 'canary' | 'haltOn'
> & {
  selection: Selection;
};

const json = (value: unknown) => JSON.stringify(value);

export class RedriveJobStore {
  constructor(private readonly db: Db) {}

  /** Unfinished jobs whose workflow was started, oldest change first: what the job watch asks Temporal about. */
  async unfinishedStarted(limit: number): Promise<{ tenantId: string; jobId: string; status: string }[]> {
    const { rows } = await this.db.query(
      `SELECT tenant_id, job_id, status FROM redrive_job WHERE status IN ('RUNNING', 'PAUSED') AND workflow_started_at IS NOT NULL
       ORDER BY updated_at LIMIT $1`,
      [limit],
    );
    return readRows('redrive_job', RedriveJobColumns.pick({ tenant_id: true, job_id: true, status: true }), rows).map((row) => ({
      tenantId: row.tenant_id,
      jobId: row.job_id,
      status: row.status,
    }));
  }

  /**
   * The executions with unredriven envelopes matching `filter`, oldest envelope first, at
   * most `limit`; REMOTE_OUTCOME_UNKNOWN ones are counted in `excluded`, never selected.
   */
  async selectByFilter(tenantId: string, filter: EnvelopeFilter, limit: number): Promise<Selection> {
    const params: unknown[] = [tenantId];
    const where = unredrivenWhere(filter, params);
    const result = await this.db.query(
      `SELECT r.execution_id, r.version, r.status FROM ${UNREDRIVEN_FROM} WHERE ${where}
       GROUP BY r.execution_id, r.version, r.status ORDER BY min(d.id) LIMIT $${params.push(limit)}`,
      params,
    );
    return splitSelection(readRows('execution_record', SelectedColumns, result.rows));
  }

  /** The listed executions at their versions now, in the order given (duplicates once); missing ones and REMOTE_OUTCOME_UNKNOWN ones are `excluded`. */
  async selectByIds(tenantId: string, executionIds: string[]): Promise<Selection> {
    const unique = [...new Set(executionIds)];
    const result = await this.db.query(`SELECT execution_id, version, status FROM execution_record WHERE tenant_id = $1 AND execution_id = ANY($2::text[])`, [
      tenantId,
      unique,
    ]);
    const found = new Map(readRows('execution_record', SelectedColumns, result.rows).map((row) => [row.execution_id, row]));
    const selection = splitSelection(unique.flatMap((id) => (found.has(id) ? [found.get(id)!] : [])));
    const missing = unique.length - found.size;
    if (missing > 0) selection.excluded.EXECUTION_NOT_FOUND = missing;
    return selection;
  }

  /** The job row and its items, in one transaction. */
  async create(job: NewRedriveJob): Promise<RedriveJob> {
    return this.db.transaction(async (tx) => {
      const created = await tx.query(
        `INSERT INTO redrive_job (tenant_id, job_id, status, principal, reason, request, batch_size, rate_per_second, canary, halt_on, excluded, selected)
         VALUES ($1, $2, 'RUNNING', $3, $4, $5::jsonb, $6, $7, $8, $9::jsonb, $10::jsonb, $11) RETURNING *`,
        [
          job.tenantId,
          job.jobId,
          job.principal,
          job.reason,
          json(job.request),
          job.batchSize,
          job.ratePerSecond,
          job.canary,
          json(job.haltOn),
          json(job.selection.excluded),
          job.selection.items.length,
        ],
      );
      await insertItems(tx, job.tenantId, job.jobId, job.selection.items);
      return toJob(created.rows[0]);
    });
  }

  /** Writes (or with null, clears) the rate a yielding job allows itself (RedriveJobTicks, when it changes). */
  async setYielding(tenantId: string, jobId: string, yielding: JobYielding | null): Promise<void> {
    await this.db.query(`UPDATE redrive_job SET yielding = $3 WHERE tenant_id = $1 AND job_id = $2`, [tenantId, jobId, yielding ? json(yielding) : null]);
  }

  async get(tenantId: string, jobId: string): Promise<RedriveJob | null> {
    const result = await this.db.query(`SELECT * FROM redrive_job WHERE tenant_id = $1 AND job_id = $2`, [tenantId, jobId]);
    return result.rowCount ? toJob(result.rows[0]) : null;
  }

  /** Newest first, after the (createdAt, jobId) of the previous page's last job. */
  async list(tenantId: string, options: { limit: number; after?: { createdAt: string; jobId: string } }): Promise<{ jobs: RedriveJob[]; more: boolean }> {
    const params: unknown[] = [tenantId];
    const after = options.after
      ? `AND (created_at, job_id) < ($${params.push(options.after.createdAt)}::timestamptz, $${params.push(options.after.jobId)})`
      : '';
    const result = await this.db.query(
      `SELECT * FROM redrive_job WHERE tenant_id = $1 ${after} ORDER BY created_at DESC, job_id DESC LIMIT $${params.push(options.limit + 1)}`,
      params,
    );
    return { jobs: result.rows.slice(0, options.limit).map(toJob), more: result.rows.length > options.limit };
  }

  /** Where the job's items stand, from its counter rows (a few rows, whatever the job's size). */
  async counts(tenantId: string, jobId: string): Promise<JobCounts> {
    return (await this.countsOf(tenantId, [jobId])).get(jobId) ?? emptyCounts();
  }

  /** The counts of several jobs in one read (a page of the job list). */
  async countsOf(tenantId: string, jobIds: string[]): Promise<Map<string, JobCounts>> {
    const result = await this.db.query(
      `SELECT j.job_id, j.selected, coalesce(sum(c.admitted), 0)::int AS admitted, coalesce(sum(c.skipped), 0)::int AS skipped,
         array_agg(c.skipped_by_code) AS codes, coalesce(sum(c.succeeded), 0)::int AS succeeded, coalesce(sum(c.failed_again), 0)::int AS failed_again,
         coalesce(sum(c.remote_outcome_unknown), 0)::int AS remote_outcome_unknown,
         min(c.first_processed_at) AS first_at, max(c.last_processed_at) AS last_at, max(c.last_admitted_at) AS last_admitted_at
       FROM redrive_job j LEFT JOIN redrive_job_count c ON c.tenant_id = j.tenant_id AND c.job_id = j.job_id
       WHERE j.tenant_id = $1 AND j.job_id = ANY($2::text[]) GROUP BY j.job_id, j.selected`,
      [tenantId, jobIds],
    );
    const counts = new Map<string, JobCounts>();
    for (const row of readRows('redrive_job_count', JobCountColumns, result.rows)) {
      const skippedByCode: Record<string, number> = {};
      for (const codes of row.codes) for (const [code, n] of Object.entries(codes ?? {})) skippedByCode[code] = (skippedByCode[code] ?? 0) + n;
      const ended = row.succeeded + row.failed_again + row.remote_outcome_unknown;
      counts.set(row.job_id, {
        selected: row.selected,
        remaining: row.selected - row.admitted - row.skipped,
        admitted: row.admitted,
        skipped: row.skipped,
        skippedByCode,
        succeeded: row.succeeded,
        failedAgain: row.failed_again,
        remoteOutcomeUnknown: row.remote_outcome_unknown,
        running: row.admitted - ended,
        firstProcessedAt: isoOrNull(row.first_at),
        lastProcessedAt: isoOrNull(row.last_at),
        lastAdmittedAt: isoOrNull(row.last_admitted_at),
      });
    }
    return counts;
  }

  /**
   * The same counts recounted from the items and their executions (what the counters must
   * equal while no later re-drive moved an admitted execution on; a record retention deleted
   * was SUCCEEDED). Reads every item of the job: for checks, never a request path.
   */
  async recount(tenantId: string, jobId: string): Promise<JobCounts> {
    const result = await this.db.query(
      `SELECT i.state, i.skip_code, CASE WHEN i.state = 'ADMITTED' THEN coalesce(r.status, 'SUCCEEDED') END AS status, count(*)::int AS n,
         min(i.processed_at) AS first_at, max(i.processed_at) AS last_at
       FROM redrive_job_item i LEFT JOIN execution_record r ON i.state = 'ADMITTED' AND r.tenant_id = i.tenant_id AND r.execution_id = i.execution_id
       WHERE i.tenant_id = $1 AND i.job_id = $2
       GROUP BY 1, 2, 3`,
      [tenantId, jobId],
    );
    const counts = emptyCounts();
    let first: number | null = null;
    let last: number | null = null;
    let lastAdmitted: number | null = null;
    for (const row of readRows('redrive_job_item', ItemRecountColumns, result.rows)) {
      counts.selected += row.n;
      if (row.first_at) first = Math.min(first ?? Infinity, new Date(row.first_at).getTime());
      if (row.last_at) last = Math.max(last ?? -Infinity, new Date(row.last_at).getTime());
      if (row.state === 'SELECTED') counts.remaining += row.n;
      else if (row.state === 'SKIPPED') {
        counts.skipped += row.n;
        const code = row.skip_code ?? 'UNKNOWN';
        counts.skippedByCode[code] = (counts.skippedByCode[code] ?? 0) + row.n;
      } else {
        counts.admitted += row.n;
        if (row.last_at) lastAdmitted = Math.max(lastAdmitted ?? -Infinity, new Date(row.last_at).getTime());
        if (row.status === 'SUCCEEDED') counts.succeeded += row.n;
        else if (row.status === 'FAILED') counts.failedAgain += row.n;
        else if (row.status === 'REMOTE_OUTCOME_UNKNOWN') counts.remoteOutcomeUnknown += row.n;
        else counts.running += row.n;
      }
    }
    counts.firstProcessedAt = first === null ? null : new Date(first).toISOString();
    counts.lastProcessedAt = last === null ? null : new Date(last).toISOString();
    counts.lastAdmittedAt = lastAdmitted === null ? null : new Date(lastAdmitted).toISOString();
    return counts;
  }

  /** The next SELECTED items in selection order. */
  async nextItems(tenantId: string, jobId: string, limit: number): Promise<SelectedItem[]> {
    const result = await this.db.query(
      `SELECT execution_id, expected_version FROM redrive_job_item WHERE tenant_id = $1 AND job_id = $2 AND state = 'SELECTED' ORDER BY ordinal LIMIT $3`,
      [tenantId, jobId, limit],
    );
    return readRows('redrive_job_item', RedriveJobItemColumns.pick({ execution_id: true, expected_version: true }), result.rows).map((row) => ({
      executionId: row.execution_id,
      expectedVersion: row.expected_version,
    }));
  }

  /** The item was refused at admission: SKIPPED with the refusal's code (only from SELECTED: an admitted item stays admitted). */
  async skip(tenantId: string, jobId: string, executionId: string, code: string): Promise<boolean> {
    const result = await this.db.query(
      `WITH item AS (
         UPDATE redrive_job_item SET state = 'SKIPPED', skip_code = $4, processed_at = now()
         WHERE tenant_id = $1 AND job_id = $2 AND execution_id = $3 AND state = 'SELECTED' RETURNING ${ITEM_COUNTED}),
       counted AS (${countItems('item')})
       SELECT 1 FROM item`,
      [tenantId, jobId, executionId, code],
    );
    return result.rowCount > 0;
  }

  /**
   * An item's admission failed for a reason that is not a refusal: counts the attempt and,
   * at `limit` attempts, skips the item as ADMISSION_FAILED (only from SELECTED). Answers
   * where the item stands now, or null when it was no longer SELECTED.
   */
  async recordAdmissionFailure(tenantId: string, jobId: string, executionId: string, limit: number): Promise<{ attempts: number; skipped: boolean } | null> {
    const result = await this.db.query(
      `WITH item AS (
         UPDATE redrive_job_item SET admission_attempts = admission_attempts + 1,
           state = CASE WHEN admission_attempts + 1 >= $4 THEN 'SKIPPED' ELSE state END,
           skip_code = CASE WHEN admission_attempts + 1 >= $4 THEN 'ADMISSION_FAILED' ELSE skip_code END,
           processed_at = CASE WHEN admission_attempts + 1 >= $4 THEN now() ELSE processed_at END
         WHERE tenant_id = $1 AND job_id = $2 AND execution_id = $3 AND state = 'SELECTED' RETURNING admission_attempts, ${ITEM_COUNTED}),
       counted AS (${countItems('item')})
       SELECT admission_attempts, state FROM item`,
      [tenantId, jobId, executionId, limit],
    );
    if (!result.rowCount) return null;
    const item = readRow('redrive_job_item', RedriveJobItemColumns.pick({ admission_attempts: true, state: true }), result.rows[0]);
    return { attempts: item.admission_attempts, skipped: item.state === 'SKIPPED' };
  }

  /**
   * Moves the job from one of `from` to `to`, appending `entry` to its control log (and
   * setting or clearing the halt reason, the failure reason, the finish time); null when its status was not one of `from`.
   */
  async transition(change: {
    tenantId: string;
    jobId: string;
    from: RedriveJobStatus[];
    to: RedriveJobStatus;
    entry: ControlEntry | null;
    haltReason: string | null;
    /** with `to: 'FAILED'`: why */
    failureReason?: string;
  }): Promise<RedriveJob | null> {
    const result = await this.db.query(
      `UPDATE redrive_job SET status = $4, halt_reason = $5, updated_at = now(),
         control_log = CASE WHEN $6::jsonb IS NULL THEN control_log ELSE control_log || jsonb_build_array($6::jsonb) END,
         finished_at = CASE WHEN $4 IN ('ABORTED', 'COMPLETED', 'FAILED') THEN now() ELSE finished_at END,
         failure_reason = CASE WHEN $4 = 'FAILED' THEN $7 ELSE failure_reason END
       WHERE tenant_id = $1 AND job_id = $2 AND status = ANY($3::text[]) RETURNING *`,
      [change.tenantId, change.jobId, change.from, change.to, change.haltReason, change.entry ? json(change.entry) : null, change.failureReason ?? null],
    );
    return result.rowCount ? toJob(result.rows[0]) : null;
  }

  async markStarted(tenantId: string, jobId: string): Promise<void> {
    await this.db.query(`UPDATE redrive_job SET workflow_started_at = now() WHERE tenant_id = $1 AND job_id = $2 AND workflow_started_at IS NULL`, [
      tenantId,
      jobId,
    ]);
  }

  /** Jobs whose workflow start was never acknowledged, oldest first, created more than `olderThanMs` ago (the request's own start may still be on its way). */
  async unstarted(options: { limit: number; olderThanMs: number }): Promise<{ tenantId: string; jobId: string }[]> {
    const result = await this.db.query(
      `SELECT tenant_id, job_id FROM redrive_job WHERE workflow_started_at IS NULL AND created_at < now() - ($2::integer * interval '1 millisecond')
       ORDER BY created_at LIMIT $1`,
      [options.limit, options.olderThanMs],
    );
    return readRows('redrive_job', RedriveJobColumns.pick({ tenant_id: true, job_id: true }), result.rows).map((row) => ({
      tenantId: row.tenant_id,
      jobId: row.job_id,
    }));
  }
}

function emptyCounts(): JobCounts {
  return {
    selected: 0,
    remaining: 0,
    admitted: 0,
    skipped: 0,
    skippedByCode: {},
    succeeded: 0,
    failedAgain: 0,
    remoteOutcomeUnknown: 0,
    running: 0,
    firstProcessedAt: null,
    lastProcessedAt: null,
    lastAdmittedAt: null,
  };
}

/** What an item statement returns (RETURNING) for `countItems` to count. */
export const ITEM_COUNTED = 'tenant_id, job_id, execution_id, state, skip_code, processed_at';

/**
 * A data-modifying CTE body that counts the items the CTE `source` returned (ITEM_COUNTED)
 * as ADMITTED or SKIPPED in their job's counter row (migration 20261126070000): used by the
 * admission statement and the skip statements, so the counts change with the items, in the
 * same statement. Items left SELECTED are not counted.
 */
export function countItems(source: string): string {
  return `INSERT INTO redrive_job_count AS c (tenant_id, job_id, shard, admitted, skipped, skipped_by_code, first_processed_at, last_processed_at, last_admitted_at)
    SELECT tenant_id, job_id, signal_shard(execution_id), (state = 'ADMITTED')::int, (state = 'SKIPPED')::int,
      CASE WHEN state = 'SKIPPED' THEN jsonb_build_object(coalesce(skip_code, 'UNKNOWN'), 1) ELSE '{}'::jsonb END,
      processed_at, processed_at, CASE WHEN state = 'ADMITTED' THEN processed_at END
    FROM ${source} WHERE state IN ('ADMITTED', 'SKIPPED')
    ON CONFLICT (tenant_id, job_id, shard) DO UPDATE SET admitted = c.admitted + EXCLUDED.admitted, skipped = c.skipped + EXCLUDED.skipped,
      skipped_by_code = c.skipped_by_code || (SELECT coalesce(jsonb_object_agg(e.code, coalesce((c.skipped_by_code->>e.code)::int, 0) + e.n::int), '{}'::jsonb)
                                              FROM jsonb_each_text(EXCLUDED.skipped_by_code) AS e(code, n)),
      first_processed_at = least(c.first_processed_at, EXCLUDED.first_processed_at),
      last_processed_at = greatest(c.last_processed_at, EXCLUDED.last_processed_at),
      last_admitted_at = greatest(c.last_admitted_at, EXCLUDED.last_admitted_at)`;
}

function splitSelection(rows: z.output<typeof SelectedColumns>[]): Selection {
  const items: SelectedItem[] = [];
  let unknown = 0;
  for (const row of rows) {
    if (row.status === 'REMOTE_OUTCOME_UNKNOWN') unknown++;
    else items.push({ executionId: row.execution_id, expectedVersion: row.version });
  }
  return { items, excluded: unknown > 0 ? { REMOTE_OUTCOME_UNKNOWN: unknown } : {} };
}

async function insertItems(tx: Queryable, tenantId: string, jobId: string, items: SelectedItem[]): Promise<void> {
  // In chunks, so a 10,000-item job stays within the statement's parameter limits.
  for (let start = 0; start < items.length; start += 2000) {
    const chunk = items.slice(start, start + 2000);
    await tx.query(
      `INSERT INTO redrive_job_item (tenant_id, job_id, execution_id, ordinal, expected_version)
       SELECT $1, $2, execution_id, ordinal, expected_version FROM unnest($3::text[], $4::integer[], $5::integer[]) AS t(execution_id, ordinal, expected_version)`,
      [tenantId, jobId, chunk.map((item) => item.executionId), chunk.map((_, i) => start + i), chunk.map((item) => item.expectedVersion)],
    );
  }
}
