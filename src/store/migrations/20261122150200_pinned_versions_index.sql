-- How many unfinished executions are pinned to each pipeline version (the pipelines
-- route, before an old version is retired): an index-only count over unfinished records.
CREATE INDEX execution_record_pinned_index ON execution_record (tenant_id, pipeline, pipeline_version, status) WHERE status <> 'SUCCEEDED';
