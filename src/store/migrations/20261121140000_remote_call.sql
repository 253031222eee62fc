-- Evidence of the remote call whose outcome is unknown (transition identity, target,
-- start time, deadline), kept while the execution is parked in REMOTE_OUTCOME_UNKNOWN.
ALTER TABLE execution_record ADD COLUMN remote_call jsonb;
