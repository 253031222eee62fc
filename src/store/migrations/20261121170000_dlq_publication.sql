-- For the broker DLQ providers (sqs, rabbitmq) the execution_dlq table is also the
-- outbox: the relay publishes each envelope and records when the broker confirmed it.
ALTER TABLE execution_dlq ADD COLUMN published_at timestamptz;
ALTER TABLE execution_dlq ADD COLUMN publish_attempts integer NOT NULL DEFAULT 0;
ALTER TABLE execution_dlq ADD COLUMN publish_lease_until timestamptz;
ALTER TABLE execution_dlq ADD COLUMN publish_error text;
CREATE INDEX execution_dlq_unpublished_index ON execution_dlq (id) WHERE published_at IS NULL;
