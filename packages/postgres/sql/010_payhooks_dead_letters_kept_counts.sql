-- Dead letters counted as they are written (issue 39): payhooks_dead_letters_counts holds how many letters each
-- (status, code, event_type) has, spread over a few rows per key (shard) so parks from many connections at once do
-- not queue on one row, and statement triggers on payhooks_dead_letters keep it in the transaction of every write
-- (park, replay, delete, sweep, or SQL of your own), so postgresDeadLetterStore's count() sums a few rows instead of
-- reading the letters. The row ('', '', '', 0) says the counts are whole: this file fills them from the letters under
-- a lock that holds writes back while it counts (one scan of the table). On a large table receiving letters, run
-- `payhooks migrate --postgres URL` (migrate(pool)) instead: it adds the triggers under a short lock_timeout, fills
-- the counts from one snapshot without holding writes back, and builds the index CONCURRENTLY; the store does the
-- same in the background on first use unless createTable is false. Renamed with the `table` option,
-- createDeadLetterCountsSql('schema.table') writes the table, function and triggers for another name. The role
-- writing letters needs SELECT, INSERT and UPDATE on the counts table; the one running this, CREATE on the schema.
-- Also the index of the retention sweep: the replayed letters by replayed_at, deleted in batches oldest first.
BEGIN;
LOCK TABLE payhooks_dead_letters IN SHARE ROW EXCLUSIVE MODE;
CREATE TABLE IF NOT EXISTS payhooks_dead_letters_counts (
  status text NOT NULL,
  code text NOT NULL,
  event_type text NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (status, code, event_type, shard)
);
CREATE OR REPLACE FUNCTION payhooks_dead_letters_count_fn() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO payhooks_dead_letters_counts AS c (status, code, event_type, shard, n)
    SELECT status, code, event_type, (pg_backend_pid() % 16)::smallint, sum(d) FROM (SELECT status, code, event_type, 1 AS d FROM new_rows) AS m GROUP BY status, code, event_type HAVING sum(d) <> 0 ORDER BY status, code, event_type
    ON CONFLICT (status, code, event_type, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO payhooks_dead_letters_counts AS c (status, code, event_type, shard, n)
    SELECT status, code, event_type, (pg_backend_pid() % 16)::smallint, sum(d) FROM (SELECT status, code, event_type, -1 AS d FROM old_rows) AS m GROUP BY status, code, event_type HAVING sum(d) <> 0 ORDER BY status, code, event_type
    ON CONFLICT (status, code, event_type, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  ELSE
    INSERT INTO payhooks_dead_letters_counts AS c (status, code, event_type, shard, n)
    SELECT status, code, event_type, (pg_backend_pid() % 16)::smallint, sum(d) FROM (SELECT status, code, event_type, 1 AS d FROM new_rows UNION ALL SELECT status, code, event_type, -1 FROM old_rows) AS m GROUP BY status, code, event_type HAVING sum(d) <> 0 ORDER BY status, code, event_type
    ON CONFLICT (status, code, event_type, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS payhooks_count_insert ON payhooks_dead_letters;
CREATE TRIGGER payhooks_count_insert AFTER INSERT ON payhooks_dead_letters
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION payhooks_dead_letters_count_fn();
DROP TRIGGER IF EXISTS payhooks_count_update ON payhooks_dead_letters;
CREATE TRIGGER payhooks_count_update AFTER UPDATE ON payhooks_dead_letters
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION payhooks_dead_letters_count_fn();
DROP TRIGGER IF EXISTS payhooks_count_delete ON payhooks_dead_letters;
CREATE TRIGGER payhooks_count_delete AFTER DELETE ON payhooks_dead_letters
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION payhooks_dead_letters_count_fn()
;
INSERT INTO payhooks_dead_letters_counts AS c (status, code, event_type, shard, n)
SELECT status, code, event_type, 0, sum(n) FROM (
  SELECT status, code, event_type, count(*) AS n FROM payhooks_dead_letters GROUP BY 1, 2, 3
  UNION ALL SELECT status, code, event_type, -n FROM payhooks_dead_letters_counts WHERE status <> ''
) AS d
WHERE NOT EXISTS (SELECT 1 FROM payhooks_dead_letters_counts WHERE status = '' AND code = '' AND event_type = '')
GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3
ON CONFLICT (status, code, event_type, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
INSERT INTO payhooks_dead_letters_counts VALUES ('', '', '', 0, 0) ON CONFLICT DO NOTHING;
CREATE INDEX IF NOT EXISTS payhooks_dead_letters_sweep_idx ON payhooks_dead_letters (replayed_at)
  WHERE status = 'replayed';
COMMIT;
