-- A bulk job that yields to live traffic (pipeline.redrive-job.yield-to-live) steers its own
-- rate by how long its admissions take; its workflow holds that state, and its tick writes it
-- here when the rate changes, so the API and the CLI can say why the job admits below its
-- asked rate: {"rate": per second, "quietestMs", "latestMs", "at"}. NULL: not yielding (the
-- asked rate holds), or the job ran before this column.
ALTER TABLE redrive_job ADD COLUMN yielding jsonb;
