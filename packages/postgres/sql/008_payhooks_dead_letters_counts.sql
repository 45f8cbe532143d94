-- Indexes of payhooks_dead_letters (made by 002) that let postgresDeadLetterStore count and page the letters of
-- one code or one event type reading only those: count() is then an index-only scan of the matching letters, and
-- a page (keyset, however deep) a few index pages. On a large table receiving letters, run each statement on its
-- own with CREATE INDEX CONCURRENTLY instead, so parking goes on while it is built. Rename the table here with the
-- `table` option (createDeadLetterCountIndexesSql('schema.table') writes them for another name).
-- postgresDeadLetterStore's init() creates them too unless createTable is false.
CREATE INDEX IF NOT EXISTS payhooks_dead_letters_code_idx
  ON payhooks_dead_letters (status, code, parked_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS payhooks_dead_letters_type_idx
  ON payhooks_dead_letters (status, event_type, parked_at DESC, event_id DESC);
