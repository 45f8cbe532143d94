import * as v from 'valibot'
import { describe, expectTypeOf, it } from 'vitest'
import { createWebhooks } from './webhooks.js'

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
})
