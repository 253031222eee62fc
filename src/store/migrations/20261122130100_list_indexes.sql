-- Every documented filter of every list endpoint reads an index in its page order, so a
-- page costs its rows whatever the tables hold (verified by EXPLAIN in
-- test/integration/list-indexes.test.ts):
--   executions?status=      → (tenant_id, status, created_at, execution_id)
--   dlq?errorCode=          → (tenant_id, error_code, id)
--   dlq?terminalReason=     → (tenant_id, terminal_reason, id)
--   dlq?terminalReason=&errorCode= → (tenant_id, terminal_reason, error_code, id)
-- (executions and rejects without a filter, and dlq/groups by group, already had theirs.)
CREATE INDEX execution_record_status_index ON execution_record (tenant_id, status, created_at DESC, execution_id DESC);
CREATE INDEX execution_dlq_error_code_index ON execution_dlq (tenant_id, error_code, id DESC);
CREATE INDEX execution_dlq_terminal_reason_index ON execution_dlq (tenant_id, terminal_reason, id DESC);
CREATE INDEX execution_dlq_reason_code_index ON execution_dlq (tenant_id, terminal_reason, error_code, id DESC);
