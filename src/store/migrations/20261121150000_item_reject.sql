-- Item Reject Sink: metadata of items a step rejected and carried on past (never the
-- item payload). Written in the same statement as the step's success commit, so a
-- redelivered step cannot add them twice.
CREATE TABLE item_reject (
  id bigserial CONSTRAINT item_reject_pkey PRIMARY KEY,
  tenant_id text NOT NULL,
  execution_id text NOT NULL,
  transition_key text NOT NULL,
  ordinal integer NOT NULL,
  step text NOT NULL,
  item_key text,
  error_code text NOT NULL,
  reason text NOT NULL,
  fingerprint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX item_reject_transition_key_index ON item_reject (tenant_id, execution_id, transition_key, ordinal);
CREATE INDEX item_reject_tenant_id_index ON item_reject (tenant_id, id DESC);
CREATE INDEX item_reject_created_at_index ON item_reject (created_at);
