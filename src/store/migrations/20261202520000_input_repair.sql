-- Repair (issue 52): a re-drive's corrected input is audited, a fork keeps its lineage.
-- redrive_audit.repair: { kind, changedPaths, beforeFingerprint, afterFingerprint, sent } (sent sealed
-- by the payload codec when keys are set); null for a re-drive without a corrected input.
ALTER TABLE redrive_audit ADD COLUMN repair jsonb;
-- execution_record.forked_from: { executionId, stepIndex, version } of the execution it was forked from.
ALTER TABLE execution_record ADD COLUMN forked_from jsonb;
