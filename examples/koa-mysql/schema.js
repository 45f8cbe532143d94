// The app's own table: one row per settled transaction, written by the webhook handler.

/** The table's DDL: run once at start here; an app keeps it in its migrations. */
export const createLedgerSql = `CREATE TABLE IF NOT EXISTS ledger (
  transaction_id VARCHAR(64) PRIMARY KEY,
  amount DOUBLE NOT NULL,
  settled_at VARCHAR(64) NOT NULL,
  event_id VARCHAR(255) NOT NULL
)`
