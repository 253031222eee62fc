-- Retention finds per-minute signal counts by age (to roll them into hours after 3 h, and
-- to drop them after 49 h) through this index, not by scanning the table.
CREATE INDEX signal_minute_minute_index ON signal_minute (minute);
