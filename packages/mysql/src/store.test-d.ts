import { createWebhooks, type HandlerContext, memoryStore } from '@payhooks/core'
import type { PoolConnection } from 'mysql2/promise'
import mysql from 'mysql2/promise'
import { describe, expectTypeOf, it } from 'vitest'
import { mysqlStore } from './store.js'
import type { MysqlHandlerContext } from './types.js'

const pool = mysql.createPool({ uri: 'mysql://root@127.0.0.1/payhooks' })

describe('context.db exists for receivers on mysqlStore only', () => {
  it('types context.db as the mysql2 PoolConnection of the transaction, without casts', () => {
    const webhooks = createWebhooks({ secret: 'whsec_types', store: mysqlStore(pool) })
    webhooks.on('transaction_settled', async (event, context) => {
      expectTypeOf(context.db).toEqualTypeOf<PoolConnection>()
      expectTypeOf(context).toEqualTypeOf<HandlerContext<MysqlHandlerContext>>()
      await context.db.query('INSERT INTO settlements (id, amount) VALUES (?, ?)', [
        event.data.transaction_id,
        event.data.settlement_amount,
      ])
    })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<PoolConnection>()
    })
  })

  it('has no context.db on a receiver with another store', () => {
    for (const webhooks of [createWebhooks({ secret: 's' }), createWebhooks({ secret: 's', store: memoryStore() })]) {
      webhooks.on('transaction_settled', (_event, context) => {
        expectTypeOf(context).toEqualTypeOf<HandlerContext>()
        // @ts-expect-error db comes with mysqlStore (or postgresStore) only
        context.db
      })
    }
  })

  it('takes a mysql2/promise Pool only', () => {
    // @ts-expect-error a callback-style pool is refused at compile time too
    mysqlStore(mysql.createPool({}).pool)
  })
})
