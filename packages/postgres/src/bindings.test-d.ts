import { createWebhooks, type HandlerContext, memoryStore } from '@payhooks/core'
import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import { drizzle } from 'drizzle-orm/node-postgres'
import { integer, pgTable, text } from 'drizzle-orm/pg-core'
import knex, { type Knex } from 'knex'
import { Kysely, PostgresDialect, type Transaction } from 'kysely'
import pg from 'pg'
import postgres, { type TransactionSql } from 'postgres'
import { DataSource, type EntityManager } from 'typeorm'
import { describe, expectTypeOf, it } from 'vitest'
import { drizzleStore } from './drizzle.js'
import { knexStore } from './knex.js'
import { kyselyStore } from './kysely.js'
import { postgresJsStore } from './postgres-js.js'
import { typeormStore } from './typeorm.js'
import type { BoundHandlerContext } from './types.js'

const pool = new pg.Pool()
const settlements = pgTable('settlements', {
  transactionId: text('transaction_id').notNull(),
  amount: integer('amount'),
})
interface DB {
  settlements: { transaction_id: string; amount: number }
}

describe('context.db is the library’s own transaction, inferred from the store', () => {
  it('drizzleStore: Drizzle’s transaction of that database, its schema’s tables usable', () => {
    const db = drizzle(pool)
    type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0]
    const webhooks = createWebhooks({ secret: 's', store: drizzleStore(db) })
    webhooks.on('transaction_settled', async (event, context) => {
      expectTypeOf(context.db).toEqualTypeOf<Tx>()
      expectTypeOf(context).toEqualTypeOf<HandlerContext<BoundHandlerContext<Tx>>>()
      await context.db.insert(settlements).values({ transactionId: event.data.transaction_id, amount: 1 })
      // @ts-expect-error a column the table does not have
      await context.db.insert(settlements).values({ transactionId: 'x', amont: 1 })
    })
    // @ts-expect-error a pg.Pool is not a Drizzle database
    drizzleStore(pool)
    expectTypeOf<NodePgDatabase>().not.toBeAny()
  })

  it('kyselyStore: Transaction<DB>', () => {
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
    const webhooks = createWebhooks({ secret: 's', store: kyselyStore(db) })
    webhooks.on('transaction_settled', async (event, { db: trx }) => {
      expectTypeOf(trx).toEqualTypeOf<Transaction<DB>>()
      await trx.insertInto('settlements').values({ transaction_id: event.data.transaction_id, amount: 1 }).execute()
      // @ts-expect-error a table DB does not have
      await trx.insertInto('settlement').values({}).execute()
    })
  })

  it('knexStore: Knex.Transaction', () => {
    const webhooks = createWebhooks({ secret: 's', store: knexStore(knex({ client: 'pg' })) })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<Knex.Transaction>()
    })
  })

  it('typeormStore: EntityManager', () => {
    const webhooks = createWebhooks({ secret: 's', store: typeormStore(new DataSource({ type: 'postgres' })) })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<EntityManager>()
    })
  })

  it('postgresJsStore: TransactionSql of the client’s types', () => {
    const webhooks = createWebhooks({ secret: 's', store: postgresJsStore(postgres()) })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<TransactionSql<{}>>()
    })
  })

  it('has no context.db on a receiver with another store', () => {
    createWebhooks({ secret: 's', store: memoryStore() }).onAny((_event, context) => {
      // @ts-expect-error db comes with the PostgreSQL stores only
      context.db
    })
  })
})
