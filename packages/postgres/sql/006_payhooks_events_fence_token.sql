-- The fencing token of each ordering key (context.ordering.token), on the fence table of 005: the token of the key's
-- last holder; each new holder gets a greater one (one more, or the database's clock in microseconds when greater).
-- The store adds it on first use; apply this instead with postgresStore(pool, { createTable: false }), renamed with
-- the `table` option (fenceTokenColumnSql('schema.table') writes it for another name: <table>_fences).
ALTER TABLE payhooks_events_fences ADD COLUMN IF NOT EXISTS fence_token bigint NOT NULL DEFAULT 0;
