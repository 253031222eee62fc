-- Window-bounded signals for triage and the metrics gauges (docs/decisions.md, "Signals
-- that do not grow with history"). Triggers keep two small tables in step with the rows
-- the commits already write, inside the same statement (no extra round trip):
--   signal_minute: events per minute (succeeded executions, DLQ envelopes by errorCode and
--     terminalReason, item rejects by fingerprint), kept for 49 hours (the longest triage
--     window is 24h, compared with the 24h before it);
--   signal_total: what the tables hold now (DLQ envelopes, item rejects, FAILED and
--     REMOTE_OUTCOME_UNKNOWN records), +1 on insert or status entry, -1 on delete or exit.
-- Rows are spread over 8 shards (a hash of the executionId) so concurrent commits of one
-- tenant rarely wait on the same counter row; readers sum the shards.

CREATE TABLE signal_minute (
  tenant_id text NOT NULL,
  signal text NOT NULL,
  minute timestamptz NOT NULL,
  key text NOT NULL DEFAULT '',
  detail text NOT NULL DEFAULT '',
  shard smallint NOT NULL,
  n bigint NOT NULL,
  CONSTRAINT signal_minute_pkey PRIMARY KEY (tenant_id, signal, minute, key, detail, shard),
  CONSTRAINT signal_minute_signal_check CHECK (signal IN ('succeeded', 'dlq', 'reject'))
);
CREATE INDEX signal_minute_signal_minute_index ON signal_minute (signal, minute);

CREATE TABLE signal_total (
  tenant_id text NOT NULL,
  signal text NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  CONSTRAINT signal_total_pkey PRIMARY KEY (tenant_id, signal, shard),
  CONSTRAINT signal_total_signal_check CHECK (signal IN ('dlq', 'reject', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'))
);

CREATE FUNCTION signal_shard(execution_id text) RETURNS smallint LANGUAGE sql IMMUTABLE AS $$ SELECT (abs(hashtext(execution_id)) % 8)::smallint $$;

CREATE FUNCTION signal_add_total(p_tenant text, p_signal text, p_shard smallint, p_n bigint) RETURNS void LANGUAGE sql AS $$
  INSERT INTO signal_total (tenant_id, signal, shard, n) VALUES (p_tenant, p_signal, p_shard, p_n)
  ON CONFLICT (tenant_id, signal, shard) DO UPDATE SET n = signal_total.n + EXCLUDED.n
$$;

-- execution_record: status entries and exits (row triggers whose WHEN filters out every
-- step commit that does not change the status, and every delete of a SUCCEEDED record).
CREATE FUNCTION signal_record_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN
    PERFORM signal_add_total(OLD.tenant_id, OLD.status, signal_shard(OLD.execution_id), -1);
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') THEN
    PERFORM signal_add_total(NEW.tenant_id, NEW.status, signal_shard(NEW.execution_id), 1);
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.status = 'SUCCEEDED' THEN
    INSERT INTO signal_minute (tenant_id, signal, minute, shard, n)
    VALUES (NEW.tenant_id, 'succeeded', date_trunc('minute', now()), signal_shard(NEW.execution_id), 1)
    ON CONFLICT (tenant_id, signal, minute, key, detail, shard) DO UPDATE SET n = signal_minute.n + 1;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER execution_record_signal_update AFTER UPDATE OF status ON execution_record
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
    AND (OLD.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') OR NEW.status IN ('SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN')))
  EXECUTE FUNCTION signal_record_status();
CREATE TRIGGER execution_record_signal_insert AFTER INSERT ON execution_record
  FOR EACH ROW WHEN (NEW.status IN ('SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN')) EXECUTE FUNCTION signal_record_status();
CREATE TRIGGER execution_record_signal_delete AFTER DELETE ON execution_record
  FOR EACH ROW WHEN (OLD.status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN')) EXECUTE FUNCTION signal_record_status();

-- execution_dlq and item_reject: statement triggers over the inserted/deleted rows.
CREATE FUNCTION signal_dlq_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO signal_minute (tenant_id, signal, minute, key, detail, shard, n)
  SELECT tenant_id, 'dlq', date_trunc('minute', created_at), error_code, terminal_reason, signal_shard(execution_id), count(*)
  FROM inserted GROUP BY 1, 3, 4, 5, 6 ORDER BY 1, 3, 4, 5, 6
  ON CONFLICT (tenant_id, signal, minute, key, detail, shard) DO UPDATE SET n = signal_minute.n + EXCLUDED.n;
  INSERT INTO signal_total (tenant_id, signal, shard, n)
  SELECT tenant_id, 'dlq', signal_shard(execution_id), count(*) FROM inserted GROUP BY 1, 3 ORDER BY 1, 3
  ON CONFLICT (tenant_id, signal, shard) DO UPDATE SET n = signal_total.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE TRIGGER execution_dlq_signal_insert AFTER INSERT ON execution_dlq
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION signal_dlq_inserted();

CREATE FUNCTION signal_reject_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO signal_minute (tenant_id, signal, minute, key, shard, n)
  SELECT tenant_id, 'reject', date_trunc('minute', created_at), fingerprint, signal_shard(execution_id), count(*)
  FROM inserted GROUP BY 1, 3, 4, 5 ORDER BY 1, 3, 4, 5
  ON CONFLICT (tenant_id, signal, minute, key, detail, shard) DO UPDATE SET n = signal_minute.n + EXCLUDED.n;
  INSERT INTO signal_total (tenant_id, signal, shard, n)
  SELECT tenant_id, 'reject', signal_shard(execution_id), count(*) FROM inserted GROUP BY 1, 3 ORDER BY 1, 3
  ON CONFLICT (tenant_id, signal, shard) DO UPDATE SET n = signal_total.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE TRIGGER item_reject_signal_insert AFTER INSERT ON item_reject
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION signal_reject_inserted();

-- Deletes (retention) take rows out of the totals; the per-minute events stay.
CREATE FUNCTION signal_rows_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO signal_total (tenant_id, signal, shard, n)
  SELECT tenant_id, TG_ARGV[0], signal_shard(execution_id), -count(*) FROM deleted GROUP BY 1, 3 ORDER BY 1, 3
  ON CONFLICT (tenant_id, signal, shard) DO UPDATE SET n = signal_total.n + EXCLUDED.n;
  RETURN NULL;
END $$;
CREATE TRIGGER execution_dlq_signal_delete AFTER DELETE ON execution_dlq
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION signal_rows_deleted('dlq');
CREATE TRIGGER item_reject_signal_delete AFTER DELETE ON item_reject
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION signal_rows_deleted('reject');

-- Recounts both tables from the rows (this migration, and a bulk load that ran with
-- triggers off). Reads whole tables: never on a request path.
CREATE FUNCTION signal_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM signal_total;
  DELETE FROM signal_minute;
  INSERT INTO signal_total (tenant_id, signal, shard, n)
  SELECT tenant_id, 'dlq', signal_shard(execution_id), count(*) FROM execution_dlq GROUP BY 1, 3
  UNION ALL SELECT tenant_id, 'reject', signal_shard(execution_id), count(*) FROM item_reject GROUP BY 1, 3
  UNION ALL SELECT tenant_id, status, signal_shard(execution_id), count(*) FROM execution_record
    WHERE status IN ('FAILED', 'REMOTE_OUTCOME_UNKNOWN') GROUP BY 1, 2, 3;
  INSERT INTO signal_minute (tenant_id, signal, minute, key, detail, shard, n)
  SELECT tenant_id, 'dlq', date_trunc('minute', created_at), error_code, terminal_reason, signal_shard(execution_id), count(*)
    FROM execution_dlq WHERE created_at > now() - interval '49 hours' GROUP BY 1, 3, 4, 5, 6
  UNION ALL SELECT tenant_id, 'reject', date_trunc('minute', created_at), fingerprint, '', signal_shard(execution_id), count(*)
    FROM item_reject WHERE created_at > now() - interval '49 hours' GROUP BY 1, 3, 4, 6
  UNION ALL SELECT tenant_id, 'succeeded', date_trunc('minute', updated_at), '', '', signal_shard(execution_id), count(*)
    FROM execution_record WHERE status = 'SUCCEEDED' AND updated_at > now() - interval '49 hours' GROUP BY 1, 3, 6;
END $$;
SELECT signal_rebuild();

-- Bounded "now" reads: runs waiting on a retry (retry saturation) and checkpoints admitted
-- within a window (triage's backlog at the window's start; retention of admitted rows).
CREATE INDEX execution_record_retry_wait_index ON execution_record (attempt) WHERE status = 'RUNNING' AND next_due_at IS NOT NULL;
CREATE INDEX checkpoint_outbox_admitted_index ON checkpoint_outbox (admitted_at) WHERE status = 'ADMITTED';
