-- The journal's counts of copies (issue 47): past the first few answers of an event in a minute, an instance keeps
-- the copies answered alike (a captured delivery replayed, a retry storm answered duplicate, in_progress or busy) as
-- one row with their number in `copies` (null: one answer), so replays cannot fill the table. A nullable column:
-- nothing is rewritten, the lock is brief. postgresJournal adds it on first use unless createTable is false; without
-- it, a count is kept as one row (and init() warns). `payhooks migrate --postgres URL` adds it too. Renamed with the
-- `table` option, journalCopiesColumnSql('schema.table') writes it for another name.
ALTER TABLE payhooks_journal ADD COLUMN IF NOT EXISTS copies integer;
