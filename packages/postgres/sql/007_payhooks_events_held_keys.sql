-- Who holds each ordering key and since when, on the fence table of 005, for webhooks.heldKeys() (the console's held
-- keys): the holder's event id and type and when it took the key, and an index of the held rows by that time, so
-- listing them reads the held keys only. The store adds them on first use; apply this instead with
-- postgresStore(pool, { createTable: false }), renamed with the `table` option (heldKeysSql('schema.table') writes it
-- for another name: <table>_fences). On a large fence table, CREATE INDEX CONCURRENTLY first avoids blocking writes.
ALTER TABLE payhooks_events_fences ADD COLUMN IF NOT EXISTS held_since timestamptz,
  ADD COLUMN IF NOT EXISTS holder_event_id text, ADD COLUMN IF NOT EXISTS holder_event_type text;
CREATE INDEX IF NOT EXISTS payhooks_events_fences_held ON payhooks_events_fences (held_since, ordering_key) WHERE holder IS NOT NULL;
