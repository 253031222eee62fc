-- The request that admitted an execution: a create() retried after a lost answer finds
-- its own row by this id and answers as the first attempt would have (not EXECUTION_EXISTS).
ALTER TABLE execution_record ADD COLUMN admission_id text;
