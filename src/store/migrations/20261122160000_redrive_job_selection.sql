-- Bulk re-drive jobs keep what their selection left out (REMOTE_OUTCOME_UNKNOWN executions,
-- which each need their own attestation, and listed ids with no execution) and the
-- request's haltOn after defaults, so a job answers for its whole selection.
ALTER TABLE redrive_job ADD COLUMN excluded jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE redrive_job ADD COLUMN halt_on jsonb NOT NULL DEFAULT '{}'::jsonb;
ALTER TABLE redrive_job ADD COLUMN selected integer NOT NULL DEFAULT 0;
-- Which admitted items' runs are still in flight is asked on every tick of a job.
CREATE INDEX redrive_job_item_state_index ON redrive_job_item (tenant_id, job_id, state);
