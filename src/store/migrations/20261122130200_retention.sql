-- Retention (docs/runbook.md, "Sizing retention"): each kind of row is found by an index
-- that holds only rows retention may delete, so a pass never rereads the rows it keeps
-- (FAILED and REMOTE_OUTCOME_UNKNOWN records, envelopes of executions still FAILED).

-- When the execution an envelope belongs to left FAILED (it was re-driven): from then on
-- the envelope is explained (by the re-drive audit) and may expire.
ALTER TABLE execution_dlq ADD COLUMN redriven_at timestamptz;
UPDATE execution_dlq d SET redriven_at = now() WHERE NOT EXISTS (
  SELECT 1 FROM execution_record r WHERE r.tenant_id = d.tenant_id AND r.execution_id = d.execution_id AND r.version = d.record_version AND r.status = 'FAILED');
CREATE INDEX execution_dlq_redriven_index ON execution_dlq (redriven_at) WHERE redriven_at IS NOT NULL;

CREATE FUNCTION dlq_mark_redriven() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE execution_dlq SET redriven_at = now()
  WHERE tenant_id = OLD.tenant_id AND execution_id = OLD.execution_id AND redriven_at IS NULL;
  RETURN NULL;
END $$;
CREATE TRIGGER execution_record_dlq_redriven AFTER UPDATE OF status ON execution_record
  FOR EACH ROW WHEN (OLD.status = 'FAILED' AND NEW.status <> 'FAILED') EXECUTE FUNCTION dlq_mark_redriven();

-- SUCCEEDED records, oldest first; started dispatch rows.
CREATE INDEX execution_record_succeeded_index ON execution_record (created_at) WHERE status = 'SUCCEEDED';
CREATE INDEX execution_dispatch_started_index ON execution_dispatch (started_at) WHERE status = 'STARTED';
