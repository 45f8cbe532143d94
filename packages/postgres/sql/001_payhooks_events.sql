-- The table of @payhooks/postgres's postgresStore, for migrations run by a role that may create tables while the
-- receiver's may not (then: postgresStore(pool, { createTable: false })). Rename it together with the `table`
-- option. The receiver's role needs SELECT, INSERT, UPDATE and DELETE on it.
-- token: the owner's token while the event is claimed, NULL once it is done.
-- expires_at: end of the claim's lease, or of the done marker's retention.
CREATE TABLE IF NOT EXISTS payhooks_events (
  event_id text PRIMARY KEY,
  token text,
  expires_at timestamptz NOT NULL
);
