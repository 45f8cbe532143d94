-- The pauses of a receiver fleet (postgresPauseStore, createWebhooks({ pauses })): a row per event type an operator
-- paused (webhooks.pause, payhooks pause, the board), `*` for every type. Each receiver reads the table every
-- refreshMs (a second by default). postgresPauseStore's init() runs it too unless createTable is false. Rename the
-- table here with the `table` option (createPauseTableSql('schema.table') writes it for another name).
CREATE TABLE IF NOT EXISTS payhooks_pauses (
  event_type text PRIMARY KEY,
  reason text NOT NULL,
  since timestamptz NOT NULL,
  paused_by text
);
