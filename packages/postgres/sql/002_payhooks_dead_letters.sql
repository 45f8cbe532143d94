-- The table of @payhooks/postgres's postgresDeadLetterStore and its list index, for migrations run by a role that
-- may create tables while the receiver's may not (then: postgresDeadLetterStore(pool, { createTable: false })).
-- Rename both together with the `table` option (createDeadLetterTableSql('schema.table') writes them for another
-- name). The receiver's role needs SELECT, INSERT, UPDATE and DELETE on the table.
-- One row per event_id. body: the exact bytes received, verified again on replay. headers: the ones a replay
-- needs (service-hmac-sha256, content-type). parked_at: the latest parking; first_parked_at: the first.
-- status: parked until a replay handled the event, then replayed (at replayed_at; swept after the retention).
CREATE TABLE IF NOT EXISTS payhooks_dead_letters (
  event_id text COLLATE "C" PRIMARY KEY,
  event_type text NOT NULL,
  body bytea NOT NULL,
  headers jsonb NOT NULL,
  code text NOT NULL CHECK (code IN ('schema_mismatch', 'handler_failed')),
  reason text NOT NULL,
  created_at timestamptz,
  first_parked_at timestamptz NOT NULL,
  parked_at timestamptz NOT NULL,
  park_count integer NOT NULL,
  status text NOT NULL CHECK (status IN ('parked', 'replayed')),
  replayed_at timestamptz
);
-- list(): WHERE status = ... ORDER BY parked_at DESC, event_id DESC, read in index order.
CREATE INDEX IF NOT EXISTS payhooks_dead_letters_list_idx
  ON payhooks_dead_letters (status, parked_at DESC, event_id DESC);
