-- The dispatch a QUEUED record waits for: the execution's first ('start') or the latest
-- re-drive's. Only a run of that dispatch takes the record (ExecutionStore.begin); a run of an
-- earlier dispatch, delivered again after the record was re-driven, never does, whatever
-- became of the later dispatch's row. Records queued now wait for their newest dispatch row.
ALTER TABLE execution_record ADD COLUMN dispatch_id text;
UPDATE execution_record r SET dispatch_id = (
  SELECT d.dispatch_id FROM execution_dispatch d
  WHERE d.tenant_id = r.tenant_id AND d.execution_id = r.execution_id
  ORDER BY d.created_at DESC LIMIT 1)
WHERE r.status = 'QUEUED';
ALTER TABLE execution_record ALTER COLUMN dispatch_id SET DEFAULT 'start';
