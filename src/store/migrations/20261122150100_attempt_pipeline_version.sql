-- The attempt log names the definition version each step attempt ran under, so the
-- history endpoint names each attempt's step by that version, not the current one.
ALTER TABLE execution_attempt ADD COLUMN pipeline_version integer;
