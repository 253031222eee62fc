-- A worker that died is not a worker that failed. Before the first request of a remote
-- step's transition identity (executionId:stepIndex:attempt) goes out, the engine notes it
-- here, so any later delivery of the same identity (another Temporal attempt, the
-- redelivery after an engine worker crash, a replay of a stalled record) knows the worker
-- may already have it: a transport error then proves nothing, and the same identity is
-- delivered again on the in-progress budget instead of failing the attempt. The re-drive's
-- evidence check reads which identities of a failed step were ever sent.
CREATE TABLE remote_delivery (
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  step_index integer NOT NULL,
  attempt integer NOT NULL,
  first_sent_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT remote_delivery_pkey PRIMARY KEY (tenant_id, execution_id, step_index, attempt),
  CONSTRAINT remote_delivery_record_fkey FOREIGN KEY (tenant_id, execution_id)
    REFERENCES execution_record (tenant_id, execution_id) ON DELETE CASCADE
);
