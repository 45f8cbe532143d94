import { createWebhooks, type HandlerContext, memoryStore } from '@payhooks/core'
import { int, mysqlTable, varchar } from 'drizzle-orm/mysql-core'
import { drizzle } from 'drizzle-orm/mysql2'
import knex, { type Knex } from 'knex'
import { Kysely, type Transaction as KyselyTransaction, MysqlDialect } from 'kysely'
import mysqlCallbacks from 'mysql2'
import mysql from 'mysql2/promise'
import { Sequelize, type Transaction } from 'sequelize'
import { DataSource, type EntityManager } from 'typeorm'
import { describe, expectTypeOf, it } from 'vitest'
import { drizzleStore } from './drizzle.js'
import { knexStore } from './knex.js'
import { kyselyStore } from './kysely.js'
import { sequelizeStore } from './sequelize.js'
import { typeormStore } from './typeorm.js'
import type { BoundMysqlHandlerContext } from './types.js'

const pool = mysql.createPool({ uri: 'mysql://root@127.0.0.1/payhooks' })
const settlements = mysqlTable('settlements', {
  transactionId: varchar('transaction_id', { length: 64 }).notNull(),
  amount: int('amount'),
})
interface DB {
  settlements: { transaction_id: string; amount: number }
}

describe('context.db is the library’s own transaction on MySQL, inferred from the store', () => {
  it('drizzleStore: Drizzle’s transaction of that database, its schema’s tables usable', () => {
    const db = drizzle(pool)
    type Tx = Parameters<Parameters<typeof db.transaction>[0]>[0]
    const webhooks = createWebhooks({ secret: 's', store: drizzleStore(db) })
    webhooks.on('transaction_settled', async (event, context) => {
      expectTypeOf(context.db).toEqualTypeOf<Tx>()
      expectTypeOf(context).toEqualTypeOf<HandlerContext<BoundMysqlHandlerContext<Tx>>>()
      await context.db.insert(settlements).values({ transactionId: event.data.transaction_id, amount: 1 })
      // @ts-expect-error a column the table does not have
      await context.db.insert(settlements).values({ transactionId: 'x', amont: 1 })
    })
    // @ts-expect-error a mysql2 pool is not a Drizzle database
    drizzleStore(pool)
  })

  it('kyselyStore: Transaction<DB>', () => {
    const db = new Kysely<DB>({ dialect: new MysqlDialect({ pool: mysqlCallbacks.createPool({}) }) })
    const webhooks = createWebhooks({ secret: 's', store: kyselyStore(db) })
    webhooks.on('transaction_settled', async (event, { db: trx }) => {
      expectTypeOf(trx).toEqualTypeOf<KyselyTransaction<DB>>()
      await trx.insertInto('settlements').values({ transaction_id: event.data.transaction_id, amount: 1 }).execute()
      // @ts-expect-error a table DB does not have
      await trx.insertInto('settlement').values({}).execute()
    })
  })

  it('knexStore: Knex.Transaction', () => {
    const webhooks = createWebhooks({ secret: 's', store: knexStore(knex({ client: 'mysql2' })) })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<Knex.Transaction>()
    })
  })

  it('typeormStore: EntityManager', () => {
    const webhooks = createWebhooks({ secret: 's', store: typeormStore(new DataSource({ type: 'mysql' })) })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<EntityManager>()
    })
  })

  it('sequelizeStore: Sequelize’s Transaction', () => {
    const webhooks = createWebhooks({ secret: 's', store: sequelizeStore(new Sequelize({ dialect: 'mysql' })) })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<Transaction>()
    })
    // @ts-expect-error a mysql2 pool is not a Sequelize instance
    sequelizeStore(pool)
  })

  it('has no context.db on a receiver with another store', () => {
    createWebhooks({ secret: 's', store: memoryStore() }).onAny((_event, context) => {
      // @ts-expect-error db comes with the SQL stores only
      context.db
    })
  })
})
