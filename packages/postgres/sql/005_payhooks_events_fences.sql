-- The ordering fences of postgresStore (createWebhooks's `ordering` option), beside the table of 001: one row per
-- ordering key. holder: the token of the claim handling an event of the key, until held_until. mark_at, mark_type,
-- mark_id: the newest event handled for the key (its time in ms since the epoch, its type and id), kept until
-- keep_until. The store creates it on first use; apply this instead with postgresStore(pool, { createTable: false }),
-- renamed with the `table` option (createFenceTableSql('schema.table') writes it for another name: <table>_fences).
-- The receiver's role needs SELECT, INSERT, UPDATE and DELETE on it.
CREATE TABLE IF NOT EXISTS payhooks_events_fences (
  ordering_key text PRIMARY KEY,
  holder text,
  held_until timestamptz NOT NULL,
  mark_at float8,
  mark_type text,
  mark_id text,
  keep_until timestamptz NOT NULL
);
