-- Checkpoint publication: accepted checkpoints wait here until admitted into
-- orchestration as executions (executionKey = handoff key). A checkpoint accepted is
-- never lost: the row stays PENDING, with backoff, until its admission succeeds.
CREATE TABLE checkpoint_outbox (
  tenant_id text NOT NULL,
  handoff_key text NOT NULL,
  pipeline text NOT NULL,
  records jsonb NOT NULL,
  record_count integer NOT NULL,
  status text NOT NULL DEFAULT 'PENDING',
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  lease_owner text,
  lease_until timestamptz,
  last_error text,
  execution_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  admitted_at timestamptz,
  CONSTRAINT checkpoint_outbox_pkey PRIMARY KEY (tenant_id, handoff_key),
  CONSTRAINT checkpoint_outbox_status_check CHECK (status IN ('PENDING', 'ADMITTED'))
);
CREATE INDEX checkpoint_outbox_pending_index ON checkpoint_outbox (next_attempt_at) WHERE status = 'PENDING';
