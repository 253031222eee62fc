-- A bulk job's rate is a ceiling on the store's own clock: each admission statement of a job
-- stamps the job row with clock_timestamp() under that row's lock, and admits nothing when the
-- job's previous admission is less than 1/rate ago (ExecutionStore.admitRedrive). Spacing on
-- the job's clock alone let two admissions' stamps land closer than that when one statement
-- waited for a connection or a lock: one 1-second window of a 10/s job held 12.
ALTER TABLE redrive_job ADD COLUMN last_admission_at timestamptz;
