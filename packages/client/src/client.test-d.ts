import { describe, expectTypeOf, it } from 'vitest'
import { type ClientAuth, createClient, type PayhooksClient, type ResellerClient } from './index.js'

const baseUrl = 'http://127.0.0.1:1'
const input = { url: 'https://x.example/h', event_types: ['transaction_settled'], is_active: true }

describe('createClient types', () => {
  it('a reseller key without merchant id gives a reseller client whose create needs the scope', () => {
    const client = createClient({ baseUrl, auth: { resellerKey: '1|abc' } })
    expectTypeOf(client).toEqualTypeOf<ResellerClient>()
    expectTypeOf(client.subscriptions.create).parameter(1).toEqualTypeOf<{
      scope: 'reseller'
      signal?: AbortSignal
      timeoutMs?: number
    }>()
    expectTypeOf(client.forMerchant(1)).toEqualTypeOf<PayhooksClient>()
  })

  it('a merchant id or merchant credentials give a merchant-context client', () => {
    expectTypeOf(
      createClient({ baseUrl, auth: { resellerKey: '1|abc' }, merchantId: 5 }),
    ).toEqualTypeOf<PayhooksClient>()
    expectTypeOf(createClient({ baseUrl, auth: { username: 'u', apiKey: 'k' } })).toEqualTypeOf<PayhooksClient>()
    const auth = { username: 'u', apiKey: 'k' } as ClientAuth
    expectTypeOf(createClient({ baseUrl, auth }).subscriptions.create(input)).resolves.toHaveProperty(
      'signature_secret',
    )
  })

  it('answers are typed', () => {
    const client = createClient({ baseUrl, auth: { username: 'u', apiKey: 'k' } })
    expectTypeOf(client.auth.clientToken({ merchantId: 1 }))
      .resolves.toHaveProperty('expires')
      .toEqualTypeOf<Date>()
    expectTypeOf(client.subscriptions.list()).resolves.toHaveProperty('total_item_count').toEqualTypeOf<number>()
    expectTypeOf(client.subscriptions.get('id')).resolves.toHaveProperty('is_active').toEqualTypeOf<boolean>()
    expectTypeOf(client.webhooks.sendTest({ url: 'u', eventType: 't' }))
      .resolves.toHaveProperty('status_code')
      .toEqualTypeOf<number>()
    expectTypeOf(client.subscriptions.delete('id')).resolves.toEqualTypeOf<void>()
  })
})
