import { createWebhooks, type HandlerContext, memoryStore } from '@payhooks/core'
import type { PoolClient } from 'pg'
import pg from 'pg'
import { describe, expectTypeOf, it } from 'vitest'
import { postgresStore } from './store.js'
import type { PostgresHandlerContext } from './types.js'

const pool = new pg.Pool()

describe('context.db exists for receivers on postgresStore only', () => {
  it('types context.db as the pg client of the transaction, without casts', () => {
    const webhooks = createWebhooks({ secret: 'whsec_types', store: postgresStore(pool) })
    webhooks.on('transaction_settled', async (event, context) => {
      expectTypeOf(context.db).toEqualTypeOf<PoolClient>()
      expectTypeOf(context.signal).toEqualTypeOf<AbortSignal>()
      expectTypeOf(context).toEqualTypeOf<HandlerContext<PostgresHandlerContext>>()
      await context.db.query('INSERT INTO settlements (id, amount) VALUES ($1, $2)', [
        event.data.transaction_id,
        event.data.settlement_amount,
      ])
      // @ts-expect-error a misspelt field is still a compile error
      event.data.settlment_amount
    })
    webhooks.onAny(async (_event, { db }) => {
      expectTypeOf(db).toEqualTypeOf<PoolClient>()
    })
  })

  it('has no context.db on a receiver with another store', () => {
    for (const webhooks of [createWebhooks({ secret: 's' }), createWebhooks({ secret: 's', store: memoryStore() })]) {
      webhooks.on('transaction_settled', (_event, context) => {
        expectTypeOf(context).toEqualTypeOf<HandlerContext>()
        // @ts-expect-error db comes with postgresStore only
        context.db
      })
    }
  })
})
