-- The whole shape of a stored definition, step by step ({"name", "transport", "command"}), so a
-- start-up refusal of a shape changed under its version can say which step changed transport
-- or Command flag (steps keeps the names alone). NULL: stored before this column.
ALTER TABLE pipeline_definition ADD COLUMN shape jsonb;
