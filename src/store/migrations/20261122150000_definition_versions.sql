-- Pipeline definition versions. An execution keeps the definition version it was
-- admitted under and the fingerprint of that definition's shape; records from before
-- versions are version 1 with no fingerprint (they ran the only definition there was).
ALTER TABLE execution_record ADD COLUMN pipeline_version integer NOT NULL DEFAULT 1;
ALTER TABLE execution_record ADD COLUMN definition_fingerprint text;

-- A Command effect belongs to its step by name: the step keeps its retained effect when a
-- re-drive moves the execution to a version where it sits at another index.
ALTER TABLE command_effect DROP CONSTRAINT command_effect_pkey;
ALTER TABLE command_effect ADD CONSTRAINT command_effect_pkey PRIMARY KEY (tenant_id, execution_id, step_name);

-- Every definition shape executions were admitted under, so a re-drive can say how the
-- current version differs from one that is no longer registered.
CREATE TABLE pipeline_definition (
  pipeline text NOT NULL,
  version integer NOT NULL,
  fingerprint text NOT NULL,
  steps jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT pipeline_definition_pkey PRIMARY KEY (pipeline, version, fingerprint)
);

-- The audit of a re-drive says which definition version the execution left and resumed under.
ALTER TABLE redrive_audit ADD COLUMN from_pipeline_version integer;
ALTER TABLE redrive_audit ADD COLUMN to_pipeline_version integer;
