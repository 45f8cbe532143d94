-- The indexes the store's hourly sweep reads (issue 39): done markers and claims by expires_at, fences (of 005) by
-- keep_until, so each batch of the sweep (5,000 rows a statement, oldest first, skipping rows another statement
-- holds) reads only the rows it deletes instead of the whole table. The store builds them on first use (CONCURRENTLY
-- on an earlier release's tables) unless createTable is false; on large tables receiving deliveries, run
-- `payhooks migrate --postgres URL` (it builds them CONCURRENTLY), or each statement here with
-- CREATE INDEX CONCURRENTLY, outside a transaction. Renamed with the `table` option, expiryIndexSql('schema.table')
-- and fenceExpiryIndexSql('schema.table') write them for another name. (011 is another store's migration.)
CREATE INDEX IF NOT EXISTS payhooks_events_expiry_idx ON payhooks_events (expires_at);
CREATE INDEX IF NOT EXISTS payhooks_events_fences_keep_idx ON payhooks_events_fences (keep_until);
