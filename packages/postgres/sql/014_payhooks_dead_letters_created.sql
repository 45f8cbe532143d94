-- The index of payhooks_dead_letters (made by 002) by the events' created_at (issue 50): counts and pages of the
-- letters created within a window (`createdAfter`, `createdBefore`: the events of an outage, whenever they were
-- parked) read only the letters in the window, a count as an index-only range scan whatever the code, type or
-- parked window. On a large table receiving letters, run it with CREATE INDEX CONCURRENTLY instead (outside a
-- transaction), so parking goes on while it is built; `payhooks migrate --postgres URL` does. Rename the table here
-- with the `table` option (createDeadLetterCreatedIndexSql('schema.table') writes it for another name).
-- postgresDeadLetterStore's init() creates it too unless createTable is false. (013 is the journal's.)
CREATE INDEX IF NOT EXISTS payhooks_dead_letters_created_idx
  ON payhooks_dead_letters (status, created_at) INCLUDE (code, event_type, parked_at);
