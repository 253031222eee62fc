-- The durable mirror of each execution, its Command effects, the Execution DLQ
-- (provider "postgres": append-only) and the dispatch outbox that the due-execution
-- sweeper drains.

CREATE TABLE execution_record (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  execution_key text,
  pipeline text NOT NULL,
  workflow_id text NOT NULL,
  status text NOT NULL,
  version integer NOT NULL,
  step_count integer NOT NULL,
  current_step_index integer NOT NULL,
  attempt integer NOT NULL,
  failed_step_index integer,
  segment_input jsonb,
  next_due_at timestamptz,
  run_id text,
  redrive_count integer NOT NULL DEFAULT 0,
  correlation_id text,
  resource_type text,
  resource_name text,
  terminal_reason text,
  last_error_code text,
  last_error_message text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT execution_record_pkey PRIMARY KEY (tenant_id, execution_id),
  CONSTRAINT execution_record_status_check CHECK (status IN ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'))
);
CREATE UNIQUE INDEX execution_record_execution_key_index ON execution_record (tenant_id, execution_key) WHERE execution_key IS NOT NULL;
CREATE INDEX execution_record_tenant_created_index ON execution_record (tenant_id, created_at DESC, execution_id DESC);

CREATE TABLE command_effect (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  step_index integer NOT NULL,
  step_name text NOT NULL,
  status text NOT NULL,
  attempt integer NOT NULL,
  transition_key text NOT NULL,
  result jsonb,
  error_code text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT command_effect_pkey PRIMARY KEY (tenant_id, execution_id, step_index),
  CONSTRAINT command_effect_status_check CHECK (status IN ('SUCCEEDED', 'FAILED_RETRYABLE', 'FAILED_TERMINAL', 'IN_FLIGHT', 'AMBIGUOUS', 'USER_ACTION_REQUIRED'))
);

CREATE TABLE execution_dlq (
  id bigserial CONSTRAINT execution_dlq_pkey PRIMARY KEY,
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  transition_key text NOT NULL,
  terminal_reason text NOT NULL,
  error_code text NOT NULL,
  record_version integer NOT NULL,
  envelope jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT execution_dlq_terminal_reason_check CHECK (terminal_reason IN ('retry_exhausted', 'non_retryable'))
);
CREATE UNIQUE INDEX execution_dlq_transition_key_index ON execution_dlq (tenant_id, execution_id, transition_key);
CREATE INDEX execution_dlq_tenant_id_index ON execution_dlq (tenant_id, id DESC);

CREATE TABLE execution_dispatch (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  dispatch_id text NOT NULL,
  workflow_args jsonb NOT NULL,
  status text NOT NULL DEFAULT 'PENDING',
  run_id text,
  attempts integer NOT NULL DEFAULT 0,
  lease_owner text,
  lease_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  CONSTRAINT execution_dispatch_pkey PRIMARY KEY (tenant_id, execution_id, dispatch_id),
  CONSTRAINT execution_dispatch_status_check CHECK (status IN ('PENDING', 'STARTED'))
);
CREATE INDEX execution_dispatch_pending_index ON execution_dispatch (created_at) WHERE status = 'PENDING';
