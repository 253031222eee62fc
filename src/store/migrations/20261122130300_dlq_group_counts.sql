-- DLQ failure groups (GET …/dlq/groups) that cost what the groups hold, not what the DLQ
-- holds. A trigger keeps, per group and UTC day, the number of unredriven envelopes
-- (redriven_at IS NULL) in `dlq_group_day`; a group's count is the sum of its days, its
-- first and last seen are read from the envelopes of its first and last day only, and its
-- last hour from a partial index over the unredriven envelopes. The group id is read
-- through to_jsonb(row), so these functions work before and after the failure-group
-- columns (a later migration) exist.

CREATE TABLE dlq_group_day (
  tenant_id text NOT NULL,
  group_id text NOT NULL,
  day timestamptz NOT NULL,
  terminal_reason text NOT NULL,
  error_code text NOT NULL,
  signature jsonb,
  n bigint NOT NULL,
  CONSTRAINT dlq_group_day_pkey PRIMARY KEY (tenant_id, group_id, day)
);

-- Adds `p_n` per row of `rows` (a jsonb array of envelope rows) that is grouped and unredriven.
CREATE FUNCTION dlq_group_add(rows jsonb, p_n integer) RETURNS void LANGUAGE sql AS $$
  INSERT INTO dlq_group_day (tenant_id, group_id, day, terminal_reason, error_code, signature, n)
  SELECT r->>'tenant_id', r->>'group_id', date_trunc('day', (r->>'created_at')::timestamptz, 'UTC'),
    min(r->>'terminal_reason'), min(r->>'error_code'), (array_agg(r->'signature'))[1], p_n * count(*)
  FROM jsonb_array_elements(rows) r
  WHERE r->>'group_id' IS NOT NULL AND r->>'redriven_at' IS NULL
  GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (tenant_id, group_id, day) DO UPDATE SET n = dlq_group_day.n + EXCLUDED.n,
    signature = coalesce(dlq_group_day.signature, EXCLUDED.signature)
$$;

CREATE FUNCTION dlq_group_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dlq_group_add((SELECT jsonb_agg(to_jsonb(i)) FROM inserted i), 1);
  RETURN NULL;
END $$;
CREATE TRIGGER execution_dlq_group_insert AFTER INSERT ON execution_dlq
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION dlq_group_inserted();

CREATE FUNCTION dlq_group_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM dlq_group_add((SELECT jsonb_agg(to_jsonb(d)) FROM deleted d), -1);
  RETURN NULL;
END $$;
CREATE TRIGGER execution_dlq_group_delete AFTER DELETE ON execution_dlq
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION dlq_group_deleted();

-- An envelope re-driven (redriven_at stamped), or given its group by a backfill, moves
-- between counts: the old row's contribution out, the new row's in.
CREATE FUNCTION dlq_group_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  old_row jsonb := to_jsonb(OLD);
  new_row jsonb := to_jsonb(NEW);
BEGIN
  IF old_row->>'group_id' IS DISTINCT FROM new_row->>'group_id' OR old_row->>'redriven_at' IS DISTINCT FROM new_row->>'redriven_at' THEN
    PERFORM dlq_group_add(jsonb_build_array(old_row), -1);
    PERFORM dlq_group_add(jsonb_build_array(new_row), 1);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER execution_dlq_group_update AFTER UPDATE ON execution_dlq
  FOR EACH ROW EXECUTE FUNCTION dlq_group_updated();

-- Recounts from the envelopes (this migration on a store whose envelopes already have
-- groups, and a bulk load with triggers off).
CREATE FUNCTION dlq_group_rebuild() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM dlq_group_day;
  IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'execution_dlq' AND column_name = 'group_id') THEN
    EXECUTE 'INSERT INTO dlq_group_day (tenant_id, group_id, day, terminal_reason, error_code, signature, n)
      SELECT tenant_id, group_id, date_trunc(''day'', created_at, ''UTC''), min(terminal_reason), min(error_code), (array_agg(signature))[1], count(*)
      FROM execution_dlq WHERE group_id IS NOT NULL AND redriven_at IS NULL GROUP BY 1, 2, 3';
  END IF;
END $$;
SELECT dlq_group_rebuild();

CREATE INDEX execution_dlq_unredriven_index ON execution_dlq (tenant_id, created_at) WHERE redriven_at IS NULL;
