-- A bulk job item whose admission fails for a reason that is not a refusal is tried again
-- a bounded number of times (admission_attempts), then skipped as ADMISSION_FAILED.
ALTER TABLE redrive_job_item ADD COLUMN admission_attempts integer NOT NULL DEFAULT 0;
-- A job whose workflow could not go on (its tick failed past its bounded retry) ends FAILED, with why.
ALTER TABLE redrive_job ADD COLUMN failure_reason text;
ALTER TABLE redrive_job DROP CONSTRAINT redrive_job_status_check;
ALTER TABLE redrive_job ADD CONSTRAINT redrive_job_status_check CHECK (status IN ('RUNNING', 'PAUSED', 'ABORTED', 'COMPLETED', 'FAILED'));
-- The scrape-time gauge of halted, paused and stuck jobs reads only the unfinished ones.
CREATE INDEX redrive_job_unfinished_index ON redrive_job (status) WHERE status IN ('RUNNING', 'PAUSED');
