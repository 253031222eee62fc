-- A bulk job's rate is a ceiling on the store's own clock. Each admission statement of a job
-- reads the job row under its lock and admits only when clock_timestamp() has reached the job's
-- next admission time less half a spacing (a generic cell rate algorithm: the tolerance absorbs
-- a late statement without letting any 1 s window hold more than the rate + 1); an admission
-- moves next_admission_at to max(itself, now) + 1/rate (ExecutionStore.admitRedrive). Spacing
-- on the job's clock alone let two admissions' stamps land closer than that when one statement
-- waited for a connection or a lock: one 1-second window of a 10/s job held 12.
ALTER TABLE redrive_job ADD COLUMN next_admission_at timestamptz;
