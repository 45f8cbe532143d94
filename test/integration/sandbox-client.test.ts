// @payhooks/client against the sandbox: the client's view of the service is the sandbox's, over
// real HTTP on 127.0.0.1.
import { ApiError, createClient } from '@payhooks/client'
import { SIGNATURE_HEADER, verify } from '@payhooks/core'
import { createManualClock, createSandbox, type Sandbox } from '@payhooks/sandbox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { type Receiver, startReceiver } from '../fixtures/sandbox-receivers.js'

const START = Date.parse('2026-11-02T15:00:00Z')
const HOUR = 3_600_000
const RESELLER_KEY = '1001|client-test-key'

let sandbox: Sandbox
let baseUrl: string
let receiver: Receiver
let failing = false

beforeAll(async () => {
  assertBuilt()
  sandbox = createSandbox({
    clock: createManualClock({ start: START }),
    resellers: [{ key: RESELLER_KEY, merchantIds: [1234, 5678] }],
    merchants: [{ id: 1234, username: 'shop1234', apiKey: 'shop-key-1234' }],
  })
  baseUrl = (await sandbox.listen()).url
  receiver = await startReceiver(() => (failing ? 500 : 200))
})

afterAll(async () => {
  await sandbox.close()
  await receiver.close()
})

const reseller = () => createClient({ baseUrl, auth: { resellerKey: RESELLER_KEY } })
const merchant = () => createClient({ baseUrl, auth: { username: 'shop1234', apiKey: 'shop-key-1234' } })

async function apiError(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(ApiError)
  return error as ApiError
}

describe('@payhooks/client against the sandbox', () => {
  it('manages a merchant subscription through its whole life', async () => {
    const shop = reseller().forMerchant(1234)
    const input = { url: receiver.url, event_types: ['transaction_settled'], is_active: true }
    const { id, signature_secret } = await shop.subscriptions.create(input)
    expect(id).toMatch(/^wsub_/)

    expect(await shop.subscriptions.get(id)).toEqual({ id, signature_secret, ...input })
    // The merchant's own credentials see the same merchant-scoped subscription.
    expect((await merchant().subscriptions.list()).data.map((s) => s.id)).toContain(id)
    // The reseller without a merchant id does not.
    expect((await reseller().subscriptions.list()).data.map((s) => s.id)).not.toContain(id)

    await shop.subscriptions.update(id, { ...input, is_active: false })
    expect((await shop.subscriptions.get(id)).is_active).toBe(false)

    await shop.subscriptions.delete(id)
    expect((await apiError(shop.subscriptions.get(id))).status).toBe(404)
  })

  it('gets 401 for bad credentials and 403 for a merchant outside the reseller', async () => {
    const wrong = createClient({ baseUrl, auth: { resellerKey: '1001|not-the-key' } })
    expect((await apiError(wrong.subscriptions.list())).status).toBe(401)
    const badMerchant = createClient({ baseUrl, auth: { username: 'shop1234', apiKey: 'nope' } })
    expect((await apiError(badMerchant.subscriptions.list())).status).toBe(401)
    expect((await apiError(reseller().forMerchant(9999).subscriptions.list())).status).toBe(403)
  })

  it('receives a signed delivery, retried hourly, and resends it by event id', async () => {
    const client = reseller()
    const { id, signature_secret } = await client.subscriptions.create(
      { url: receiver.url, event_types: ['sale_created_from_batch'], is_active: true },
      { scope: 'reseller' },
    )
    const before = receiver.requests.length
    failing = true
    const { eventId } = await sandbox.emit('sale_created_from_batch', undefined, { merchantId: 5678 })
    failing = false
    await sandbox.advance(HOUR)
    const received = receiver.requests.slice(before)
    expect(received).toHaveLength(2)
    for (const request of received) {
      expect(request.json?.event_id).toBe(eventId)
      expect(await verify(signature_secret, request.body, request.headers[SIGNATURE_HEADER] as string)).toBe(true)
    }
    expect(sandbox.deliveries(eventId)[0]).toMatchObject({ subscriptionId: id, state: 'delivered' })

    await client.webhooks.resend([eventId])
    expect(receiver.requests.length - before).toBe(3)
    expect((await apiError(client.webhooks.resend(['evt_nobody_knows']))).status).toBe(404)
  })

  it("a resend's 404 says which subscriptions were searched, in the client and in the CLI", async () => {
    // Subscribed the README's way (reseller key, all merchants), then resent with a merchant id: not found there.
    await reseller().subscriptions.create(
      { url: receiver.url, event_types: ['transaction_returned'], is_active: true },
      { scope: 'reseller' },
    )
    const { eventId } = await sandbox.emit('transaction_returned', undefined, { merchantId: 1234 })
    const forMerchant = await apiError(reseller().forMerchant(1234).webhooks.resend([eventId]))
    expect([forMerchant.status, forMerchant.searched]).toEqual([404, { scope: 'merchant', merchantId: 1234 }])
    expect(forMerchant.message).toMatch(/searched merchant 1234's subscriptions only; .*\(scope 'reseller'\)/)
    expect(forMerchant.message).toContain('no event delivered to the subscriptions of merchant 1234')
    const ofMerchant = await apiError(merchant().webhooks.resend([eventId]))
    expect(ofMerchant.searched).toEqual({ scope: 'merchant', merchantId: undefined })
    const unknown = await apiError(reseller().webhooks.resend(['evt_nobody_knows']))
    expect(unknown.message).toMatch(/searched the reseller's subscriptions for all its merchants/)

    const env = { PAYHOOKS_BASE_URL: baseUrl, PAYHOOKS_RESELLER_KEY: RESELLER_KEY }
    const refused = await runCli(['resend', eventId, '--merchant', '1234'], { env })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/searched merchant 1234's subscriptions only; one made for all .*--all-merchants/)
    const resent = await runCli(['resend', eventId], { env })
    expect([resent.code, resent.stderr]).toEqual([0, ''])
  })

  it('sends a test webhook and obtains a client token', async () => {
    const { status_code } = await merchant().webhooks.sendTest({ url: receiver.url, eventType: 'transaction_settled' })
    expect(status_code).toBe(200)
    expect(receiver.requests.at(-1)?.json).toMatchObject({ event_type: 'transaction_settled', merchant_id: 1234 })

    const { token, expires } = await reseller().auth.clientToken({ merchantId: 1234 })
    expect(token.split('.')).toHaveLength(3)
    expect(expires.getTime()).toBe(sandbox.clock.now() + HOUR)
    expect((await apiError(reseller().auth.clientToken({ merchantId: 42 }))).status).toBe(403)
  })
})
