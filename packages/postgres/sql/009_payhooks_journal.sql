-- The table of @payhooks/postgres's postgresJournal and its indexes, for migrations run by a role that may create
-- tables while the receiver's may not (then: postgresJournal(pool, { createTable: false })). Rename them together
-- with the `table` option (createJournalTableSql('schema.table') writes them for another name). The receiver's role
-- needs SELECT, INSERT and DELETE on the table.
-- One row per answer to a signed delivery; at: when it was answered, ms since the epoch; id: unique in the fleet.
-- Never the body, never a secret. Rows older than the journal's retentionMs are deleted in batches by (at, id).
CREATE TABLE IF NOT EXISTS payhooks_journal (
  at bigint NOT NULL,
  id text COLLATE "C" NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  event_type text NOT NULL,
  created_at text,
  status smallint NOT NULL,
  outcome text NOT NULL,
  instance text NOT NULL,
  duration_ms integer NOT NULL,
  secret_index smallint NOT NULL,
  secret_label text,
  PRIMARY KEY (at, id)
);
CREATE INDEX IF NOT EXISTS payhooks_journal_event_idx ON payhooks_journal (event_id, at);
CREATE INDEX IF NOT EXISTS payhooks_journal_outcome_idx ON payhooks_journal (outcome, at DESC, id DESC)
  WHERE outcome NOT IN ('processed', 'duplicate');
