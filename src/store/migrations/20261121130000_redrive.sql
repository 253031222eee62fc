-- Audit of every accepted re-drive: who, why, what they asked for, and what it moved.
CREATE TABLE redrive_audit (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  redrive_id text NOT NULL,
  principal text NOT NULL,
  reason text NOT NULL,
  request jsonb NOT NULL,
  mode text NOT NULL,
  from_status text NOT NULL,
  from_version integer NOT NULL,
  to_version integer NOT NULL,
  resume_step_index integer NOT NULL,
  attempt integer NOT NULL,
  confirmed_disposition text,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT redrive_audit_pkey PRIMARY KEY (tenant_id, execution_id, redrive_id)
);
CREATE INDEX redrive_audit_created_at_index ON redrive_audit (created_at);
