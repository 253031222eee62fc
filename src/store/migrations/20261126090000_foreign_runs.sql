-- Runs of an execution's workflow the orchestrator did not start (a Reset in the Temporal UI
-- or CLI, or a second start of a dispatch another run already owns). Their first step refuses
-- them without touching the record; this table is how the execution's history says so.
CREATE TABLE execution_foreign_run (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  run_id text NOT NULL,
  -- the run that owns the record, and the record's status, when the foreign run was refused
  owner_run_id text,
  record_status text NOT NULL,
  reason text NOT NULL,
  noticed_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT execution_foreign_run_pkey PRIMARY KEY (tenant_id, execution_id, run_id),
  CONSTRAINT execution_foreign_run_record_fkey FOREIGN KEY (tenant_id, execution_id)
    REFERENCES execution_record (tenant_id, execution_id) ON DELETE CASCADE
);
