/**
 * The shapes of the pipeline definitions executions were admitted under (step names in
 * order), kept after a version is unregistered so a re-drive can say what changed.
 * Written once per shape per process, at the first admission under it.
 */
import { z } from 'zod';
import type { Db } from './db';
import { EXECUTION_STATUSES, type ExecutionStatus } from '../spec-words';
import { num, readRow, readRows, text } from './columns';
import { PipelineDefinitionColumns } from './rows';

export interface DefinitionShape {
  pipeline: string;
  version: number;
  fingerprint: string;
  steps: string[];
  /** each step's name, transport and Command flag; null (or absent) when stored without them */
  shape?: StepShape[] | null;
}

export interface StepShape {
  name: string;
  transport: string;
  command: boolean;
}

/** Unfinished executions of a tenant by pipeline, pinned version and status. */
export interface PinnedCount {
  pipeline: string;
  version: number;
  status: Exclude<ExecutionStatus, 'SUCCEEDED'>;
  count: number;
}

/** pinned_count (and execution_record counted live): unfinished executions by pipeline, pinned version and status. */
const PinnedCountColumns = z.object({
  pipeline: text,
  pipeline_version: num,
  status: z.enum(EXECUTION_STATUSES).exclude(['SUCCEEDED']),
  count: num,
});
const FingerprintCount = z.object({ fingerprint: text, count: num });
const FoundColumns = PipelineDefinitionColumns.pick({ pipeline: true, version: true, fingerprint: true, steps: true, shape: true });

const shapeKey = (pipeline: string, version: number, fingerprint: string) => `${pipeline}\u0000${version}\u0000${fingerprint}`;

export class DefinitionStore {
  private readonly remembered = new Set<string>();

  constructor(private readonly db: Db) {}

  /** Records a shape (idempotent); one round trip the first time this process sees it, none after. */
  async remember(shape: DefinitionShape): Promise<void> {
    const key = shapeKey(shape.pipeline, shape.version, shape.fingerprint);
    if (this.remembered.has(key)) return;
    await this.db.query(
      `INSERT INTO pipeline_definition (pipeline, version, fingerprint, steps, shape) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb) ON CONFLICT DO NOTHING`,
      [shape.pipeline, shape.version, shape.fingerprint, JSON.stringify(shape.steps), shape.shape ? JSON.stringify(shape.shape) : null],
    );
    this.remembered.add(key);
  }

  /** The shape an execution was pinned to; with no fingerprint (a record from before versions), the newest of that version. */
  async find(pipeline: string, version: number, fingerprint: string | null): Promise<DefinitionShape | null> {
    const result = await this.db.query(
      `SELECT pipeline, version, fingerprint, steps, shape FROM pipeline_definition
       WHERE pipeline = $1 AND version = $2 AND ($3::text IS NULL OR fingerprint = $3) ORDER BY created_at DESC LIMIT 1`,
      [pipeline, version, fingerprint],
    );
    const row = result.rows[0] === undefined ? undefined : readRow('pipeline_definition', FoundColumns, result.rows[0]);
    return row ? { pipeline: row.pipeline, version: row.version, fingerprint: row.fingerprint, steps: row.steps, shape: row.shape } : null;
  }

  /** Every shape stored for (pipeline, version), oldest first: more than one means it changed without a new version. */
  async fingerprints(pipeline: string, version: number): Promise<string[]> {
    const result = await this.db.query(`SELECT fingerprint FROM pipeline_definition WHERE pipeline = $1 AND version = $2 ORDER BY created_at, fingerprint`, [
      pipeline,
      version,
    ]);
    return readRows('pipeline_definition', PipelineDefinitionColumns.pick({ fingerprint: true }), result.rows).map((row) => row.fingerprint);
  }

  /**
   * Unfinished executions pinned to (pipeline, version) under another shape than
   * `fingerprint`, in one tenant or (no tenant) in all: they cannot run or be re-driven on
   * the definition registered now. Records from before fingerprints (null) are not counted.
   */
  async pinnedToOtherShape(pipeline: string, version: number, fingerprint: string, tenantId?: string): Promise<number> {
    // FAILED and REMOTE_OUTCOME_UNKNOWN from their counters (they grow with history), QUEUED and RUNNING live (in flight).
    const result = await this.db.query(
      `SELECT ((SELECT coalesce(sum(n), 0) FROM pinned_count
                WHERE pipeline = $1 AND pipeline_version = $2 AND fingerprint <> '' AND fingerprint <> $3 AND ($4::text IS NULL OR tenant_id = $4))
             + (SELECT count(*) FROM execution_record
                WHERE pipeline = $1 AND pipeline_version = $2 AND status IN ('QUEUED', 'RUNNING')
                  AND definition_fingerprint IS NOT NULL AND definition_fingerprint <> $3 AND ($4::text IS NULL OR tenant_id = $4)))::integer AS count`,
      [pipeline, version, fingerprint, tenantId ?? null],
    );
    return result.rows[0] === undefined ? 0 : readRow('pinned_count', z.object({ count: num }), result.rows[0]).count;
  }

  /**
   * The other shapes of (pipeline, version) that unfinished executions are pinned to, with
   * their counts, most executions first: what a start-up refusal names.
   */
  async pinnedShapes(pipeline: string, version: number, fingerprint: string): Promise<{ fingerprint: string; count: number }[]> {
    const result = await this.db.query(
      `SELECT fingerprint, sum(n)::integer AS count FROM (
         SELECT fingerprint, n FROM pinned_count WHERE pipeline = $1 AND pipeline_version = $2 AND fingerprint <> '' AND fingerprint <> $3
         UNION ALL
         SELECT definition_fingerprint, 1 FROM execution_record
         WHERE pipeline = $1 AND pipeline_version = $2 AND status IN ('QUEUED', 'RUNNING') AND definition_fingerprint IS NOT NULL AND definition_fingerprint <> $3
       ) pinned GROUP BY fingerprint HAVING sum(n) > 0 ORDER BY count DESC, fingerprint`,
      [pipeline, version, fingerprint],
    );
    return readRows('pinned_count', FingerprintCount, result.rows);
  }

  /**
   * Forgets the shapes of (pipeline, version) other than `keep` that no execution record was
   * admitted under (a start with a mistaken shape that admitted nothing): they explain no
   * execution, and kept they would make every later start look changed. Returns them.
   */
  async forgetUnused(pipeline: string, version: number, keep: string): Promise<string[]> {
    const deleted = await this.db.query(
      `DELETE FROM pipeline_definition d WHERE d.pipeline = $1 AND d.version = $2 AND d.fingerprint <> $3
         AND NOT EXISTS (SELECT 1 FROM execution_record e WHERE e.pipeline = $1 AND e.pipeline_version = $2 AND e.definition_fingerprint = d.fingerprint)
       RETURNING d.fingerprint`,
      [pipeline, version, keep],
    );
    const rows = readRows('pipeline_definition', PipelineDefinitionColumns.pick({ fingerprint: true }), deleted.rows);
    for (const row of rows) this.remembered.delete(shapeKey(pipeline, version, row.fingerprint));
    return rows.map((row) => row.fingerprint).sort();
  }

  /**
   * Executions that still need their pinned version: to finish (QUEUED, RUNNING: counted live,
   * they are in flight) or to be re-driven as they are (FAILED, REMOTE_OUTCOME_UNKNOWN: read
   * from the counters their status trigger keeps, so the read does not grow with history).
   */
  async pinnedCounts(tenantId: string): Promise<PinnedCount[]> {
    const result = await this.db.query(
      `SELECT pipeline, pipeline_version, status, sum(n)::integer AS count FROM pinned_count
       WHERE tenant_id = $1 GROUP BY pipeline, pipeline_version, status HAVING sum(n) <> 0
       UNION ALL
       SELECT pipeline, pipeline_version, status, count(*)::integer FROM execution_record
       WHERE tenant_id = $1 AND status IN ('QUEUED', 'RUNNING') GROUP BY pipeline, pipeline_version, status`,
      [tenantId],
    );
    return readRows('pinned_count', PinnedCountColumns, result.rows).map((row) => ({
      pipeline: row.pipeline,
      version: row.pipeline_version,
      status: row.status,
      count: row.count,
    }));
  }

  /** The same counts read from the records themselves (a recount: what the counters must equal). Scans every unfinished record: not for a request path. */
  async recountPinned(tenantId: string): Promise<PinnedCount[]> {
    const result = await this.db.query(
      `SELECT pipeline, pipeline_version, status, count(*)::integer AS count FROM execution_record
       WHERE tenant_id = $1 AND status <> 'SUCCEEDED' GROUP BY pipeline, pipeline_version, status`,
      [tenantId],
    );
    return readRows('pinned_count', PinnedCountColumns, result.rows).map((row) => ({
      pipeline: row.pipeline,
      version: row.pipeline_version,
      status: row.status,
      count: row.count,
    }));
  }
}
