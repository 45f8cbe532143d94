-- Adds body_digest to the table of 001: the digest of the body each claim was made with (the first 16 bytes of
-- SHA-256, hex), kept with the done marker, so postgresStore reports a copy of a handled event whose bytes differ
-- (EventConflictError). Apply it after 001, renamed with the `table` option (bodyDigestColumnSql('schema.table')
-- writes it for another name). Without it the store works as before, without that report. A nullable column
-- without a default is added without rewriting the table; rows written before it have none.
ALTER TABLE payhooks_events ADD COLUMN IF NOT EXISTS body_digest text;
