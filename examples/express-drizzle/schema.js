// The app's own table, as Drizzle sees it: one row per settled transaction, written by the webhook handler.
import { doublePrecision, pgTable, text } from 'drizzle-orm/pg-core'

export const settlements = pgTable('settlements', {
  transactionId: text('transaction_id').primaryKey(),
  amount: doublePrecision('amount').notNull(),
  settledAt: text('settled_at').notNull(),
  eventId: text('event_id').notNull(),
})

/** The table's DDL: run once at start here; an app keeps it in its migrations (drizzle-kit). */
export const createSettlementsSql = `CREATE TABLE IF NOT EXISTS settlements (
  transaction_id text PRIMARY KEY,
  amount double precision NOT NULL,
  settled_at text NOT NULL,
  event_id text NOT NULL
)`
