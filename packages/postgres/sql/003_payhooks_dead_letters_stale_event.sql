-- Lets payhooks_dead_letters (made by 002) take letters of code stale_event: events older than the receiver's
-- maxEventAgeMs and not handled before, such as a manual resend after a long outage, which the receiver parks
-- instead of acknowledging them unhandled. Replaces the check on code with one naming every code; does nothing on
-- a table that names it already. Rename the table here with the `table` option (widenDeadLetterCodeSql('schema.table')
-- writes it for another name). postgresDeadLetterStore's init() runs it too unless createTable is false.
DO $$
DECLARE
  old_check name;
BEGIN
  SELECT conname INTO old_check FROM pg_constraint
  WHERE conrelid = 'payhooks_dead_letters'::regclass AND contype = 'c'
    AND pg_get_constraintdef(oid) LIKE '%handler_failed%' AND pg_get_constraintdef(oid) NOT LIKE '%stale_event%';
  IF old_check IS NOT NULL THEN
    EXECUTE format('ALTER TABLE payhooks_dead_letters DROP CONSTRAINT %I', old_check);
    ALTER TABLE payhooks_dead_letters ADD CHECK (code IN ('schema_mismatch', 'handler_failed', 'stale_event'));
  END IF;
END $$;
