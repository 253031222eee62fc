-- Fleet re-drive. Each DLQ envelope keeps its failure group (a hash of the failure
-- signature, computed when the envelope is written) so `dlq/groups` and a bulk selection
-- by group read an index instead of folding messages at read time.
ALTER TABLE execution_dlq ADD COLUMN group_id text;
ALTER TABLE execution_dlq ADD COLUMN signature jsonb;
CREATE INDEX execution_dlq_group_id_index ON execution_dlq (tenant_id, group_id, id);

-- An execution's story: one row per committed step outcome (succeeded, retry scheduled,
-- failed, outcome unknown), appended by the same statement that commits it. Append-only.
CREATE TABLE execution_attempt (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  step_index integer NOT NULL,
  attempt integer NOT NULL,
  outcome text NOT NULL,
  error_code text,
  run_id text,
  version integer NOT NULL,
  evidence jsonb,
  committed_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT execution_attempt_pkey PRIMARY KEY (tenant_id, execution_id, version),
  CONSTRAINT execution_attempt_outcome_check CHECK (outcome IN ('SUCCEEDED', 'RETRY_SCHEDULED', 'FAILED', 'REMOTE_OUTCOME_UNKNOWN'))
);

-- Which bulk job made a re-drive (null for a single re-drive).
ALTER TABLE redrive_audit ADD COLUMN job_id text;

-- Bulk re-drive jobs. The job row is also its own start outbox: written in the
-- request's transaction, its workflow is started after commit, and the job sweeper
-- starts any whose start was lost (workflow_started_at still null).
CREATE TABLE redrive_job (
  tenant_id text NOT NULL,
  job_id text NOT NULL,
  status text NOT NULL,
  principal text NOT NULL,
  reason text NOT NULL,
  request jsonb NOT NULL,
  batch_size integer NOT NULL,
  rate_per_second double precision NOT NULL,
  canary integer,
  halt_reason text,
  control_log jsonb NOT NULL DEFAULT '[]'::jsonb,
  workflow_started_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  CONSTRAINT redrive_job_pkey PRIMARY KEY (tenant_id, job_id),
  CONSTRAINT redrive_job_status_check CHECK (status IN ('RUNNING', 'PAUSED', 'ABORTED', 'COMPLETED'))
);
CREATE INDEX redrive_job_created_at_index ON redrive_job (tenant_id, created_at DESC, job_id DESC);
CREATE INDEX redrive_job_unstarted_index ON redrive_job (created_at) WHERE workflow_started_at IS NULL;

-- One row per selected execution: the unique key is what makes "at most once per job".
CREATE TABLE redrive_job_item (
  tenant_id text NOT NULL,
  job_id text NOT NULL,
  execution_id text NOT NULL,
  ordinal integer NOT NULL,
  expected_version integer NOT NULL,
  state text NOT NULL DEFAULT 'SELECTED',
  skip_code text,
  redrive_id text,
  processed_at timestamptz,
  CONSTRAINT redrive_job_item_pkey PRIMARY KEY (tenant_id, job_id, execution_id),
  CONSTRAINT redrive_job_item_state_check CHECK (state IN ('SELECTED', 'ADMITTED', 'SKIPPED'))
);
CREATE INDEX redrive_job_item_ordinal_index ON redrive_job_item (tenant_id, job_id, ordinal) WHERE state = 'SELECTED';

-- Envelopes written before failure groups existed: grouped by what they carry
-- (terminalReason, errorCode, transport), with the code standing in for the message.
UPDATE execution_dlq SET
  group_id = substr(md5(concat_ws('|', terminal_reason, error_code, envelope->>'transport')), 1, 16),
  signature = jsonb_build_object('step', 'unknown', 'errorCode', error_code, 'terminalReason', terminal_reason,
    'transport', coalesce(envelope->>'transport', 'unknown'), 'message', error_code)
WHERE group_id IS NULL;
