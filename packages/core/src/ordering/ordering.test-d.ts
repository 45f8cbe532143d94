import { describe, expectTypeOf, it } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import type { ClaimResult } from '../store.js'
import type { Ordering } from './index.js'

describe('ordering rules are typed from the schemas', () => {
  it('types each rule with its event, and context.ordering', () => {
    const webhooks = createWebhooks({
      secret: 'whsec_types',
      ordering: {
        transaction_settled: {
          key: (event) => event.data.transaction_id,
          at: (event) => {
            expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
            return event.data.settlement_date
          },
        },
        transaction_returned: {
          key: (event) => event.data.transaction_id,
          at: (event) => event.settlement_date ?? event.data.settlement_date,
        },
      },
    })
    webhooks.on(
      'transaction_returned',
      (_event, context) => {
        expectTypeOf(context.ordering).toEqualTypeOf<Ordering | undefined>()
        expectTypeOf(context.ordering!.token).toEqualTypeOf<number>()
        // @ts-expect-error the fencing token is read-only
        context.ordering!.token = 1
      },
      { skipSuperseded: true },
    )
  })

  it('refuses a misspelt event type or field', () => {
    createWebhooks({
      secret: 'whsec_types',
      ordering: {
        // @ts-expect-error a misspelt event type is a compile error
        transaction_setled: { key: () => 'k', at: () => 0 },
      },
    })
    createWebhooks({
      secret: 'whsec_types',
      ordering: {
        transaction_settled: {
          // @ts-expect-error a misspelt field is a compile error
          key: (event) => event.data.transaction_idd,
          at: () => 0,
        },
      },
    })
  })
})

describe('fencing tokens', () => {
  it('a claim of an ordered event may answer its fencing token, a number', () => {
    const claimed: ClaimResult = { status: 'claimed', token: 't', fencingToken: 1_764_000_000_000_000 }
    if (claimed.status === 'claimed') expectTypeOf(claimed.fencingToken).toEqualTypeOf<number | undefined>()
    // @ts-expect-error a fencing token is a number, not a string
    const wrong: ClaimResult = { status: 'claimed', token: 't', fencingToken: '1' }
    void wrong
  })
})
