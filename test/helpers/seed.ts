/**
 * A store seeded with history, set-based (generate_series), for the growth benchmark and
 * the EXPLAIN checks of the list indexes. Executions arrive at a steady rate (one per
 * `intervalMs`) ending now, so a bigger store holds a longer history at the same traffic:
 * the question is whether a read's cost grows with history.
 *
 *   - executions in tenant `big` (1 in 50 in `other-0..6`): 1 in 33 FAILED with its DLQ
 *     envelope, 1 in 1,000 REMOTE_OUTCOME_UNKNOWN, the newest 200 RUNNING (a third waiting
 *     on a retry) and the newest 20 QUEUED, the rest SUCCEEDED;
 *   - `rejects` item rejects spread over the executions (17 fingerprints);
 *   - 1 checkpoint per 100 executions, admitted, the newest 5 pending.
 *
 * Rows are loaded with triggers off and the signal and failure-group counters rebuilt from
 * them afterwards (with the pinned-version counts; per-minute counts older than 3 h rolled into hours, as retention does).
 * With `rebuildIndexes` the tables' secondary indexes are dropped before the load and built
 * after it (faster for millions of rows).
 */
import type { Db } from '../../src/store/db';
import { RetentionStore } from '../../src/store/retention-store';
import { SIGNAL_MINUTES_EXACT_MS } from '../../src/store/signals-store';

export interface SeedOptions {
  executions: number;
  rejects: number;
  /** time between two executions; default 1 s */
  intervalMs?: number;
  rebuildIndexes?: boolean;
  progress?: (line: string) => void;
  /**
   * A bad day on top of the steady traffic: this many more executions of tenant `big` FAILED
   * (retry_exhausted, HTTP_503, so one failure group) with their DLQ envelopes, spread over
   * the last 24 h, ids `bad-000000001`… (tens of thousands is a real bad day).
   */
  badDay?: number;
  /**
   * Bulk re-drive jobs of tenant `big` (all COMPLETED but the newest, RUNNING), each over
   * `items` of the FAILED executions: 9 in 10 items ADMITTED, the rest SKIPPED; their
   * counters rebuilt from the items.
   */
  jobs?: { count: number; items: number };
}

export const SEEDED_TABLES = ['execution_record', 'execution_dlq', 'item_reject', 'checkpoint_outbox'];
/** Error codes of the seeded envelopes: a frequent one, a rare one (1 envelope in 10,000 failures). */
export const SEEDED_CODES = { frequent: 'HTTP_503', rare: 'RARE_CODE', nonRetryable: 'CONTRACT_MISMATCH' };

export async function seedStore(db: Db, options: SeedOptions): Promise<void> {
  const say = options.progress ?? (() => undefined);
  const n = options.executions;
  const interval = (options.intervalMs ?? 1000) / 1000;
  const indexes: { indexname: string; indexdef: string }[] = [];
  await db.transaction(async (tx) => {
    await tx.query(`SET LOCAL session_replication_role = replica`);
    await tx.query(`SET LOCAL maintenance_work_mem = '512MB'`);
    await tx.query(`SET LOCAL synchronous_commit = off`);
    if (options.rebuildIndexes) {
      const found = await tx.query<{ indexname: string; indexdef: string }>(
        `SELECT i.indexname, i.indexdef FROM pg_indexes i
         WHERE i.schemaname = current_schema() AND i.tablename = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`,
        [SEEDED_TABLES],
      );
      indexes.push(...found.rows);
      for (const index of indexes) await tx.query(`DROP INDEX ${index.indexname}`);
    }
    const params = [n, interval];
    // t(i): when execution i was created; the newest (i = n) a few seconds ago.
    const t = (i: string) => `(now() - make_interval(secs => ($1 - ${i}) * $2 + 5))`;
    say(`seeding ${n} executions`);
    await tx.query(
      `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt,
         failed_step_index, segment_input, next_due_at, run_id, correlation_id, terminal_reason, last_error_code, last_error_message,
         remote_call, created_at, updated_at)
       SELECT s.tenant, s.id, 'demo', 'pipeline/' || s.tenant || '/' || s.id, s.status,
         CASE s.status WHEN 'SUCCEEDED' THEN 7 WHEN 'FAILED' THEN 9 WHEN 'REMOTE_OUTCOME_UNKNOWN' THEN 5 WHEN 'RUNNING' THEN 3 ELSE 1 END,
         5, CASE s.status WHEN 'SUCCEEDED' THEN 5 WHEN 'FAILED' THEN 2 WHEN 'REMOTE_OUTCOME_UNKNOWN' THEN 3 WHEN 'RUNNING' THEN 1 ELSE 0 END,
         CASE WHEN s.status = 'FAILED' THEN 6 WHEN s.status = 'RUNNING' AND s.i % 3 = 0 THEN 3 + s.i % 4 ELSE 1 END,
         CASE s.status WHEN 'FAILED' THEN 2 WHEN 'REMOTE_OUTCOME_UNKNOWN' THEN 3 END,
         jsonb_build_object('orderId', s.i, 'amount', s.i % 1000, 'currency', 'EUR'),
         CASE WHEN s.status = 'RUNNING' AND s.i % 3 = 0 THEN now() + interval '30 seconds' END,
         CASE WHEN s.status <> 'QUEUED' THEN md5(s.id) END, 'corr-' || s.i,
         CASE WHEN s.status = 'FAILED' THEN s.reason END, CASE WHEN s.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN s.code END,
         CASE WHEN s.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN 'upstream refused order ' || s.i END,
         CASE WHEN s.status = 'REMOTE_OUTCOME_UNKNOWN' THEN jsonb_build_object('transitionKey', s.id || ':3:1', 'protocol', 'REST', 'target', 'http://payments.internal/charge',
           'startedAt', s.created_at, 'deadlineMs', 30000, 'elapsedMs', 30004) END,
         s.created_at, s.created_at + interval '2 seconds'
       FROM (SELECT g AS i, 'e' || lpad(g::text, 9, '0') AS id,
               CASE WHEN g % 50 = 0 THEN 'other-' || (g % 7) ELSE 'big' END AS tenant,
               CASE WHEN g > $1 - 20 THEN 'QUEUED' WHEN g > $1 - 200 THEN 'RUNNING' WHEN g % 33 = 0 THEN 'FAILED'
                    WHEN g % 1000 = 7 THEN 'REMOTE_OUTCOME_UNKNOWN' ELSE 'SUCCEEDED' END AS status,
               CASE WHEN (g / 33) % 5 = 0 THEN 'non_retryable' ELSE 'retry_exhausted' END AS reason,
               CASE WHEN g % 1000 = 7 THEN 'REMOTE_OUTCOME_UNKNOWN' WHEN g % 330000 = 0 THEN '${SEEDED_CODES.rare}'
                    WHEN (g / 33) % 5 = 0 THEN (ARRAY['${SEEDED_CODES.nonRetryable}', 'INVALID_PAYLOAD'])[1 + (g / 165) % 2]
                    ELSE (ARRAY['${SEEDED_CODES.frequent}', 'TIMEOUT', 'CONNECTION_RESET', 'HTTP_502'])[1 + (g / 33) % 4] END AS code,
               ${t('g')} AS created_at
             FROM generate_series(1, $1::int) g) s`,
      params,
    );
    if (options.badDay) {
      say(`seeding a bad day: ${options.badDay} more failures in the last 24 h`);
      await tx.query(
        `INSERT INTO execution_record (tenant_id, execution_id, pipeline, workflow_id, status, version, step_count, current_step_index, attempt,
           failed_step_index, segment_input, run_id, correlation_id, terminal_reason, last_error_code, last_error_message, created_at, updated_at)
         SELECT 'big', s.id, 'demo', 'pipeline/big/' || s.id, 'FAILED', 9, 5, 2, 6, 2, jsonb_build_object('orderId', s.g), md5(s.id), 'corr-bad-' || s.g,
           'retry_exhausted', '${SEEDED_CODES.frequent}', 'upstream refused order ' || s.g, s.at, s.at + interval '2 seconds'
         FROM (SELECT g, 'bad-' || lpad(g::text, 9, '0') AS id, now() - make_interval(secs => 86000.0 * ($1 - g) / $1 + 5) AS at
               FROM generate_series(1, $1::int) g) s`,
        [options.badDay],
      );
    }
    say('seeding DLQ envelopes');
    await tx.query(
      `INSERT INTO execution_dlq (tenant_id, execution_id, transition_key, terminal_reason, error_code, record_version, envelope, created_at, group_id, signature)
       SELECT r.tenant_id, r.execution_id, r.execution_id || ':2:6', r.terminal_reason, r.last_error_code, r.version,
         jsonb_build_object('tenantId', r.tenant_id, 'executionId', r.execution_id, 'executionKey', NULL, 'transitionKey', r.execution_id || ':2:6',
           'correlationId', r.correlation_id, 'resourceType', NULL, 'resourceName', NULL, 'transport', 'REST', 'platform', 'temporal',
           'terminalStatus', 'FAILED', 'createdAtEpochMs', (extract(epoch FROM r.updated_at) * 1000)::bigint, 'terminalReason', r.terminal_reason,
           'errorCode', r.last_error_code, 'errorMessage', r.last_error_message, 'retryable', r.terminal_reason = 'retry_exhausted', 'retriesObserved', 5),
         r.updated_at, substr(md5(r.terminal_reason || r.last_error_code), 1, 16),
         jsonb_build_object('step', 'charge', 'errorCode', r.last_error_code, 'terminalReason', r.terminal_reason, 'transport', 'REST', 'message', 'upstream refused order #')
       FROM execution_record r WHERE r.status = 'FAILED' ORDER BY r.updated_at`,
    );
    say(`seeding ${options.rejects} item rejects`);
    await tx.query(
      `INSERT INTO item_reject (tenant_id, execution_id, transition_key, ordinal, step, item_key, error_code, reason, fingerprint, created_at)
       SELECT CASE WHEN e % 50 = 0 THEN 'other-' || (e % 7) ELSE 'big' END, 'e' || lpad(e::text, 9, '0'), 'e' || lpad(e::text, 9, '0') || ':1:1', j,
         'validate', 'item-' || j, CASE WHEN j % 17 < 12 THEN 'INVALID_SKU' ELSE 'UNKNOWN_CURRENCY' END, 'sku # is not in catalogue #', 'fp' || (j % 17),
         ${t('e')} + interval '1 second'
       FROM (SELECT j, greatest(1, ceil(j::numeric * $1 / $3))::int AS e FROM generate_series(1, $3::int) j) s`,
      [n, interval, options.rejects],
    );
    say('seeding checkpoints');
    await tx.query(
      `INSERT INTO checkpoint_outbox (tenant_id, handoff_key, pipeline, records, record_count, status, attempts, execution_id, created_at, admitted_at, next_attempt_at)
       SELECT 'big', 'h' || k, 'demo', '[]'::jsonb, 0, CASE WHEN k > $3 - 5 THEN 'PENDING' ELSE 'ADMITTED' END, 1, 'c' || k, ${t('k * 100')},
         CASE WHEN k > $3 - 5 THEN NULL ELSE ${t('k * 100')} + interval '1 second' END, now()
       FROM generate_series(1, $3::int) k`,
      [n, interval, Math.max(5, Math.floor(n / 100))],
    );
    for (const index of indexes) {
      say(`building ${index.indexname}`);
      await tx.query(index.indexdef);
    }
    if (options.jobs) {
      say(`seeding ${options.jobs.count} bulk re-drive jobs of ${options.jobs.items} items`);
      await tx.query(
        `INSERT INTO redrive_job (tenant_id, job_id, status, principal, reason, request, halt_on, batch_size, rate_per_second, selected, created_at, finished_at, workflow_started_at)
         SELECT 'big', 'job-' || lpad(j::text, 4, '0'), CASE WHEN j = $1 THEN 'RUNNING' ELSE 'COMPLETED' END, 'ops', 'seeded',
           jsonb_build_object('selection', jsonb_build_object('groupId', substr(md5('retry_exhausted${SEEDED_CODES.frequent}'), 1, 16)), 'reason', 'seeded', 'allowFailed', true),
           '{"failedAgainShare": 0.5, "minFinished": 5, "remoteOutcomeUnknown": true}'::jsonb,
           50, 50, $2, now() - make_interval(hours => $1 - j + 1), CASE WHEN j = $1 THEN NULL ELSE now() - make_interval(hours => $1 - j) END, now() - make_interval(hours => $1 - j + 1)
         FROM generate_series(1, $1::int) j`,
        [options.jobs.count, options.jobs.items],
      );
      await tx.query(
        `INSERT INTO redrive_job_item (tenant_id, job_id, execution_id, ordinal, expected_version, state, skip_code, redrive_id, processed_at)
         SELECT 'big', j.job_id, f.execution_id, f.n - 1, f.version, CASE WHEN f.n % 10 = 0 THEN 'SKIPPED' ELSE 'ADMITTED' END,
           CASE WHEN f.n % 10 = 0 THEN 'VERSION_MISMATCH' END, CASE WHEN f.n % 10 <> 0 THEN j.job_id || '-' || f.n END,
           j.created_at + make_interval(secs => f.n / 50.0)
         FROM redrive_job j,
           LATERAL (SELECT execution_id, version, row_number() OVER (ORDER BY execution_id DESC) AS n FROM execution_record
                    WHERE tenant_id = 'big' AND status = 'FAILED' ORDER BY execution_id DESC LIMIT $1) f
         WHERE j.tenant_id = 'big'`,
        [options.jobs.items],
      );
    }
    say('rebuilding the signal and failure-group counters');
    await tx.query('SELECT signal_rebuild()');
    await tx.query('SELECT dlq_group_rebuild()');
    await tx.query('SELECT pinned_rebuild()');
    await tx.query('SELECT redrive_job_count_rebuild()');
  });
  // As the running service's retention pass would have: counts older than 3 h by the hour.
  await new RetentionStore(db).compactSignalMinutes(SIGNAL_MINUTES_EXACT_MS, 10_000_000);
  say('vacuum analyze');
  await db.query(
    `VACUUM (ANALYZE) ${SEEDED_TABLES.join(', ')}, signal_minute, signal_total, dlq_group_day, pinned_count, redrive_job, redrive_job_item, redrive_job_count`,
  );
}
