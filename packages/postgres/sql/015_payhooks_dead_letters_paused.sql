-- Lets payhooks_dead_letters (made by 002, widened by 003) take letters of code paused: deliveries of an event type
-- an operator paused (webhooks.pause), parked until webhooks.resume replays them. Replaces the check on code with
-- one naming every code; does nothing on a table that names it already. Rename the table here with the `table`
-- option (widenDeadLetterCodeSql('schema.table') writes it for another name). postgresDeadLetterStore's init() runs
-- it too unless createTable is false.
DO $$
DECLARE
  old_check name;
BEGIN
  SELECT conname INTO old_check FROM pg_constraint
  WHERE conrelid = 'payhooks_dead_letters'::regclass AND contype = 'c'
    AND pg_get_constraintdef(oid) LIKE '%handler_failed%' AND pg_get_constraintdef(oid) NOT LIKE '%paused%';
  IF old_check IS NOT NULL THEN
    EXECUTE format('ALTER TABLE payhooks_dead_letters DROP CONSTRAINT %I', old_check);
    ALTER TABLE payhooks_dead_letters ADD CHECK (code IN ('schema_mismatch', 'handler_failed', 'stale_event', 'paused'));
  END IF;
END $$;
