import * as v from 'valibot'
import { describe, expectTypeOf, it } from 'vitest'
import { StoreError } from './errors/index.js'
import { memoryStore } from './memory/store.js'
import { createWebhooks } from './receiver/create.js'
import type { UnknownEvent } from './schemas/events.js'
import type { WebhookStore } from './store.js'
import type { StoreErrorOperation, StoreOperation } from './telemetry/store-operations.js'
import type { EventMap, HandlerContext, Webhooks } from './types.js'

const webhooks = createWebhooks({ secret: 'whsec_types' })

describe('handler types come from the schemas', () => {
  it('types transaction_settled', () => {
    webhooks.on('transaction_settled', (event) => {
      expectTypeOf(event.event_id).toEqualTypeOf<string>()
      expectTypeOf(event.merchant_id).toEqualTypeOf<number>()
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
      expectTypeOf(event.data.transaction_fees_amount).toEqualTypeOf<number | undefined>()
      expectTypeOf(event.data.transaction_external_id).toEqualTypeOf<string | null>()
      expectTypeOf(event.client_id).toEqualTypeOf<string | number | undefined>()
      // @ts-expect-error a misspelt field is a compile error
      event.data.settlment_amount
    })
  })

  it('types the quirks of transaction_returned and merchant activation', () => {
    webhooks.on('transaction_returned', (event) => {
      expectTypeOf(event.created_at).toEqualTypeOf<string | undefined>()
      expectTypeOf(event.settlement_date).toEqualTypeOf<string | undefined>()
      expectTypeOf(event.data.settlement_description).toEqualTypeOf<string | undefined>()
    })
    webhooks.on('merchant_activated_for_payment_type', (event) => {
      expectTypeOf(event.data.external_id).toEqualTypeOf<string | null>()
      expectTypeOf(event.data.currency_code).toEqualTypeOf<string | undefined>()
      expectTypeOf(event.data.merchant_id).toEqualTypeOf<number>()
    })
  })

  it('gives data: unknown to types without a schema', () => {
    webhooks.on('payment_created', (event) => {
      expectTypeOf(event.event_type).toEqualTypeOf<'payment_created'>()
      expectTypeOf(event.event_id).toEqualTypeOf<string>()
      expectTypeOf(event.data).toEqualTypeOf<unknown>()
    })
    webhooks.onAny((event) => {
      expectTypeOf(event.event_id).toEqualTypeOf<string>()
    })
  })

  it('types a schema the user registers', () => {
    const custom = createWebhooks({
      secret: 'whsec_types',
      schemas: {
        payment_created: v.looseObject({
          event_type: v.literal('payment_created'),
          event_id: v.string(),
          data: v.object({ amount: v.number() }),
        }),
      },
    })
    custom.on('payment_created', (event) => {
      expectTypeOf(event.data.amount).toEqualTypeOf<number>()
      // @ts-expect-error not in the registered schema
      event.data.amont
    })
    custom.on('transaction_settled', (event) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
    })
  })

  it('keeps every type when schemas come from a conditional', () => {
    const payment = v.looseObject({
      event_type: v.literal('payment_created'),
      event_id: v.string(),
      data: v.object({ amount: v.number() }),
    })
    const settled = v.looseObject({
      event_type: v.literal('transaction_settled'),
      event_id: v.string(),
      data: v.object({ settlement_amount: v.string() }),
    })
    const flag = process.env.PAYMENTS === 'on'
    const either = createWebhooks({ secret: 'whsec_types', schemas: flag ? { payment_created: payment } : {} })
    either.on('transaction_settled', (event) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
      // @ts-expect-error a misspelt field is still a compile error
      event.data.settlment_amount
    })
    either.on('payment_created', (event) => {
      // Typed in one branch, data: unknown in the other: narrow before use.
      expectTypeOf(event).toEqualTypeOf<v.InferOutput<typeof payment> | UnknownEvent<'payment_created'>>()
    })
    const keyed = createWebhooks({
      secret: 'whsec_types',
      schemas: { payment_created: flag ? payment : undefined, transaction_settled: flag ? settled : undefined },
    })
    keyed.on('transaction_settled', (event) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number | string>()
    })
    keyed.on('transaction_returned', (event) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
    })
  })
})

describe('handlers get a context typed from the store', () => {
  it('gives every handler a signal, and nothing a plain store does not add', () => {
    webhooks.on('transaction_settled', (event, context) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
      expectTypeOf(context.signal).toEqualTypeOf<AbortSignal>()
      expectTypeOf(context).toEqualTypeOf<HandlerContext>()
      // @ts-expect-error only a store with transactions adds db
      context.db
    })
    webhooks.onAny((_event, { signal }) => {
      expectTypeOf(signal).toEqualTypeOf<AbortSignal>()
    })
    createWebhooks({ secret: 'whsec_types', store: memoryStore() }).on('transaction_returned', (_event, context) => {
      expectTypeOf(context).toEqualTypeOf<HandlerContext>()
    })
    // Handlers written before the context existed still fit.
    const legacy = (event: { event_id: string }) => event.event_id
    webhooks.onAny(legacy)
  })

  it("infers the store's context from options.store", () => {
    interface Ledger {
      credit(id: string, amount: number): Promise<void>
    }
    const store = {} as WebhookStore<{ ledger: Ledger }>
    const custom = createWebhooks({ secret: 'whsec_types', store })
    custom.on('transaction_settled', async (event, context) => {
      expectTypeOf(context.ledger).toEqualTypeOf<Ledger>()
      expectTypeOf(context.signal).toEqualTypeOf<AbortSignal>()
      await context.ledger.credit(event.data.transaction_id, event.data.settlement_amount)
      // @ts-expect-error not in the store's context
      context.db
    })
    custom.onAny((_event, context) => {
      expectTypeOf(context).toEqualTypeOf<HandlerContext<{ ledger: Ledger }>>()
    })
    // With schemas too, both are inferred.
    const both = createWebhooks({
      secret: 'whsec_types',
      store,
      schemas: {
        payment_created: v.looseObject({
          event_type: v.literal('payment_created'),
          event_id: v.string(),
          data: v.object({ amount: v.number() }),
        }),
      },
    })
    both.on('payment_created', (event, { ledger }) => {
      expectTypeOf(event.data.amount).toEqualTypeOf<number>()
      expectTypeOf(ledger).toEqualTypeOf<Ledger>()
    })
    // A receiver with a store context still goes where a plain receiver is expected (adapters, queues).
    expectTypeOf(custom).toExtend<Webhooks<EventMap>>()
  })
})

describe('errors', () => {
  it("types StoreError's operation as a union that holds telemetry's store operations", () => {
    expectTypeOf<StoreError['operation']>().toEqualTypeOf<StoreErrorOperation>()
    expectTypeOf<StoreOperation>().toExtend<StoreErrorOperation>()
    // @ts-expect-error free text is not an operation
    new StoreError('clam', new Error('typo'))
  })
})
