-- Counts kept where they are written: three reads that grew with history
-- read small counter rows instead. Every counter is changed in the statement (or the trigger
-- of the statement) that changes what it counts, by an upsert of `n = n + delta`, which
-- Postgres serialises on the counter row: exact under any concurrency. Rows are spread over
-- 8 shards (signal_shard of the executionId) so concurrent writers rarely wait on one row.
-- No trigger is added on execution_record: the existing status trigger (signal_record_status)
-- fires on the same transitions, so a step commit fires no more trigger calls than before.

-- 1. Executions pinned to a pipeline version that the history keeps (FAILED and
--    REMOTE_OUTCOME_UNKNOWN records are never deleted): counted per (tenant, pipeline,
--    version, shape fingerprint, status). QUEUED and RUNNING ones are in flight (bounded by
--    the workers, not by history) and are counted live through a partial index of them.
CREATE TABLE pinned_count (
  tenant_id text NOT NULL,
  pipeline text NOT NULL,
  pipeline_version integer NOT NULL,
  -- '' for records from before fingerprints
  fingerprint text NOT NULL,
  status text NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  CONSTRAINT pinned_count_pkey PRIMARY KEY (tenant_id, pipeline, pipeline_version, fingerprint, status, shard),
  CONSTRAINT pinned_count_status_check CHECK (status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN'))
);
-- The start-up shape check asks across tenants.
CREATE INDEX pinned_count_version_index ON pinned_count (pipeline, pipeline_version);

DROP INDEX IF EXISTS execution_record_pinned_index;
CREATE INDEX execution_record_in_flight_index ON execution_record (tenant_id, pipeline, pipeline_version, status, definition_fingerprint)
  WHERE status IN ('QUEUED', 'RUNNING');

-- 2. Which bulk job admitted the run an execution is in (null: none, or a single re-drive):
--    set by the re-drive's admission statement, read when the run ends.
ALTER TABLE execution_record ADD COLUMN redrive_job_id text;

-- 3. Per-job item counters: admitted by the admission statement, skipped by the skip
--    statements, succeeded / failedAgain / remoteOutcomeUnknown when a run the job admitted
--    ends (the status trigger). remaining = selected - admitted - skipped; running = admitted -
--    succeeded - failedAgain - remoteOutcomeUnknown.
CREATE TABLE redrive_job_count (
  tenant_id text NOT NULL,
  job_id text NOT NULL,
  shard smallint NOT NULL,
  admitted integer NOT NULL DEFAULT 0,
  skipped integer NOT NULL DEFAULT 0,
  skipped_by_code jsonb NOT NULL DEFAULT '{}'::jsonb,
  succeeded integer NOT NULL DEFAULT 0,
  failed_again integer NOT NULL DEFAULT 0,
  remote_outcome_unknown integer NOT NULL DEFAULT 0,
  first_processed_at timestamptz,
  last_processed_at timestamptz,
  last_admitted_at timestamptz,
  CONSTRAINT redrive_job_count_pkey PRIMARY KEY (tenant_id, job_id, shard)
);

-- The status trigger's function, as before (signal totals, succeeded minutes), plus: a run a
-- job admitted that ends (QUEUED/RUNNING → SUCCEEDED, FAILED, REMOTE_OUTCOME_UNKNOWN) counts in
-- its job (first: every writer takes the job's counter row before the pinned one), and
-- entries into and exits from FAILED / REMOTE_OUTCOME_UNKNOWN move the pinned counts.
CREATE OR REPLACE FUNCTION signal_record_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND NEW.redrive_job_id IS NOT NULL AND OLD.status IN ('QUEUED', 'RUNNING')
     AND NEW.status IN ('SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN
    INSERT INTO redrive_job_count (tenant_id, job_id, shard, succeeded, failed_again, remote_outcome_unknown)
    VALUES (NEW.tenant_id, NEW.redrive_job_id, signal_shard(NEW.execution_id), (NEW.status = 'SUCCEEDED')::int, (NEW.status = 'FAILED')::int,
      (NEW.status = 'REMOTE_OUTCOME_UNKNOWN')::int)
    ON CONFLICT (tenant_id, job_id, shard) DO UPDATE SET succeeded = redrive_job_count.succeeded + EXCLUDED.succeeded,
      failed_again = redrive_job_count.failed_again + EXCLUDED.failed_again,
      remote_outcome_unknown = redrive_job_count.remote_outcome_unknown + EXCLUDED.remote_outcome_unknown;
  END IF;
  IF TG_OP <> 'INSERT' AND OLD.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN
    PERFORM signal_add_total(OLD.tenant_id, OLD.status, signal_shard(OLD.execution_id), -1);
    PERFORM pinned_add(OLD.tenant_id, OLD.pipeline, OLD.pipeline_version, OLD.definition_fingerprint, OLD.status, signal_shard(OLD.execution_id), -1);
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN
    PERFORM signal_add_total(NEW.tenant_id, NEW.status, signal_shard(NEW.execution_id), 1);
    PERFORM pinned_add(NEW.tenant_id, NEW.pipeline, NEW.pipeline_version, NEW.definition_fingerprint, NEW.status, signal_shard(NEW.execution_id), 1);
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'SUCCEEDED' THEN
    INSERT INTO signal_minute (tenant_id, signal, minute, shard, n)
    VALUES (NEW.tenant_id, 'succeeded', date_trunc('minute', now()), signal_shard(NEW.execution_id), 1)
    ON CONFLICT (tenant_id, signal, minute, key, detail, shard) DO UPDATE SET n = signal_minute.n + 1;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION pinned_add(p_tenant text, p_pipeline text, p_version integer, p_fingerprint text, p_status text, p_shard smallint, p_n bigint)
RETURNS void LANGUAGE sql AS $$
  INSERT INTO pinned_count (tenant_id, pipeline, pipeline_version, fingerprint, status, shard, n)
  VALUES (p_tenant, p_pipeline, p_version, coalesce(p_fingerprint, ''), p_status, p_shard, p_n)
  ON CONFLICT (tenant_id, pipeline, pipeline_version, fingerprint, status, shard) DO UPDATE SET n = pinned_count.n + EXCLUDED.n
$$;

-- Recounts the pinned counts from the records (this migration, and a bulk load with triggers off).
CREATE FUNCTION pinned_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM pinned_count;
  INSERT INTO pinned_count (tenant_id, pipeline, pipeline_version, fingerprint, status, shard, n)
  SELECT tenant_id, pipeline, pipeline_version, coalesce(definition_fingerprint, ''), status, signal_shard(execution_id), count(*)
  FROM execution_record WHERE status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') GROUP BY 1, 2, 3, 4, 5, 6;
END $$;
SELECT pinned_rebuild();

-- Runs in flight that a job admitted (the latest re-drive of the execution was the job's).
UPDATE execution_record r SET redrive_job_id = a.job_id
FROM redrive_audit a
WHERE r.status IN ('QUEUED', 'RUNNING') AND a.tenant_id = r.tenant_id AND a.execution_id = r.execution_id AND a.to_version <= r.version
  AND a.job_id IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM redrive_audit later WHERE later.tenant_id = a.tenant_id AND later.execution_id = a.execution_id AND later.to_version > a.to_version);

-- Recounts every job's counters from its items, as the items and their executions stand now
-- (a record retention deleted was SUCCEEDED: it deletes no other): this migration, and a bulk
-- load with triggers off.
CREATE FUNCTION redrive_job_count_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM redrive_job_count;
  INSERT INTO redrive_job_count (tenant_id, job_id, shard, admitted, skipped, skipped_by_code, succeeded, failed_again, remote_outcome_unknown,
    first_processed_at, last_processed_at, last_admitted_at)
  SELECT tenant_id, job_id, shard, count(*) FILTER (WHERE state = 'ADMITTED'), count(*) FILTER (WHERE state = 'SKIPPED'),
    '{}'::jsonb,
    count(*) FILTER (WHERE state = 'ADMITTED' AND coalesce(status, 'SUCCEEDED') = 'SUCCEEDED'),
    count(*) FILTER (WHERE state = 'ADMITTED' AND status = 'FAILED'),
    count(*) FILTER (WHERE state = 'ADMITTED' AND status = 'REMOTE_OUTCOME_UNKNOWN'),
    min(processed_at), max(processed_at), max(processed_at) FILTER (WHERE state = 'ADMITTED')
  FROM (SELECT i.tenant_id, i.job_id, signal_shard(i.execution_id) AS shard, i.state, coalesce(i.skip_code, 'UNKNOWN') AS skip_code, i.processed_at, r.status
        FROM redrive_job_item i LEFT JOIN execution_record r ON r.tenant_id = i.tenant_id AND r.execution_id = i.execution_id
        WHERE i.state <> 'SELECTED') s
  GROUP BY tenant_id, job_id, shard;
  UPDATE redrive_job_count c SET skipped_by_code = s.codes
  FROM (SELECT tenant_id, job_id, shard, jsonb_object_agg(code, n) AS codes
        FROM (SELECT tenant_id, job_id, signal_shard(execution_id) AS shard, coalesce(skip_code, 'UNKNOWN') AS code, count(*) AS n
              FROM redrive_job_item WHERE state = 'SKIPPED' GROUP BY 1, 2, 3, 4) x
        GROUP BY 1, 2, 3) s
  WHERE c.tenant_id = s.tenant_id AND c.job_id = s.job_id AND c.shard = s.shard;
END $$;
SELECT redrive_job_count_rebuild();

-- 4. Failure groups' first and last seen: each day row keeps the time of its oldest and newest
--    unredriven envelope. An insert moves them out (least / greatest); a removal (re-drive,
--    delete) that took a day's oldest or newest reads that day's bounds again, through a partial
--    index of the unredriven envelopes by group (one probe each), after the day row is locked:
--    a concurrent insert waits on that lock and then applies its own least / greatest.
ALTER TABLE dlq_group_day ADD COLUMN first_at timestamptz;
ALTER TABLE dlq_group_day ADD COLUMN last_at timestamptz;
CREATE INDEX execution_dlq_unredriven_group_index ON execution_dlq (tenant_id, group_id, created_at) WHERE redriven_at IS NULL;

CREATE OR REPLACE FUNCTION dlq_group_add(rows jsonb, p_n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO dlq_group_day (tenant_id, group_id, day, terminal_reason, error_code, signature, n, first_at, last_at)
  SELECT r->>'tenant_id', r->>'group_id', date_trunc('day', (r->>'created_at')::timestamptz, 'UTC'),
    min(r->>'terminal_reason'), min(r->>'error_code'), (array_agg(r->'signature'))[1], p_n * count(*),
    CASE WHEN p_n > 0 THEN min((r->>'created_at')::timestamptz) END, CASE WHEN p_n > 0 THEN max((r->>'created_at')::timestamptz) END
  FROM jsonb_array_elements(rows) r
  WHERE r->>'group_id' IS NOT NULL AND r->>'redriven_at' IS NULL
  GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (tenant_id, group_id, day) DO UPDATE SET n = dlq_group_day.n + EXCLUDED.n,
    signature = coalesce(dlq_group_day.signature, EXCLUDED.signature),
    first_at = least(dlq_group_day.first_at, EXCLUDED.first_at), last_at = greatest(dlq_group_day.last_at, EXCLUDED.last_at);
  IF p_n < 0 THEN
    -- A new statement: its snapshot sees every writer that held the day row before us.
    UPDATE dlq_group_day g SET first_at = b.first_at, last_at = b.last_at
    FROM (SELECT r->>'tenant_id' AS tenant_id, r->>'group_id' AS group_id, date_trunc('day', (r->>'created_at')::timestamptz, 'UTC') AS day,
            min((r->>'created_at')::timestamptz) AS oldest, max((r->>'created_at')::timestamptz) AS newest
          FROM jsonb_array_elements(rows) r WHERE r->>'group_id' IS NOT NULL AND r->>'redriven_at' IS NULL GROUP BY 1, 2, 3) removed,
      LATERAL (SELECT min(d.created_at) AS first_at, max(d.created_at) AS last_at FROM execution_dlq d
               WHERE d.tenant_id = removed.tenant_id AND d.group_id = removed.group_id AND d.redriven_at IS NULL
                 AND d.created_at >= removed.day AND d.created_at < removed.day + interval '1 day') b
    WHERE g.tenant_id = removed.tenant_id AND g.group_id = removed.group_id AND g.day = removed.day
      AND (removed.oldest <= g.first_at OR removed.newest >= g.last_at OR g.first_at IS NULL);
  END IF;
END $$;

CREATE OR REPLACE FUNCTION dlq_group_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM dlq_group_day;
  INSERT INTO dlq_group_day (tenant_id, group_id, day, terminal_reason, error_code, signature, n, first_at, last_at)
  SELECT tenant_id, group_id, date_trunc('day', created_at, 'UTC'), min(terminal_reason), min(error_code), (array_agg(signature))[1], count(*),
    min(created_at), max(created_at)
  FROM execution_dlq WHERE group_id IS NOT NULL AND redriven_at IS NULL GROUP BY 1, 2, 3;
END $$;
SELECT dlq_group_rebuild();
