import * as nodeCrypto from 'node:crypto'
import { createHash } from 'node:crypto'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { nodeCryptoProvider } from '../crypto/node-crypto-provider.js'
import { subtleCryptoProvider } from '../crypto/subtle-crypto-provider.js'
import { memoryDeadLetterStore } from '../dead-letters/index.js'
import { EventConflictError, type WebhookError } from '../errors/index.js'
import type { LogFields } from '../logging/log.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { ClaimResult, WebhookStore } from '../store.js'
import type { WebhookResult } from '../types.js'

const secret = 'whsec_conflict_test'
const rotated = 'whsec_conflict_rotated'
const createdAt = new Date().toISOString()
const sha = (body: string) => createHash('sha256').update(body).digest('hex').slice(0, 32)

/** A settled event whose amount tells the copies apart. */
const settled = (amount: number) => {
  const event = sampleEvent('transaction_settled', { eventId: 'evt_conflict', createdAt })
  return { ...event, data: { ...(event.data as object), transaction_id: 'txn_1', settlement_amount: amount } }
}

async function deliver(
  webhooks: { receive: (d: { body: string; getHeader: (n: string) => string | undefined }) => Promise<WebhookResult> },
  body: string,
  signWith = secret,
) {
  const { headers } = await signedDelivery(body, signWith)
  return webhooks.receive({ body, getHeader: (name) => (headers as Record<string, string>)[name] })
}

function receiver(store: WebhookStore = memoryStore()) {
  const errors: WebhookError[] = []
  const runs: number[] = []
  const webhooks = createWebhooks({ secret: [secret, rotated], store })
  webhooks.on('transaction_settled', (event) => {
    runs.push(event.data.settlement_amount)
  })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, runs }
}

describe('the body digest', () => {
  it('is the first 16 bytes of SHA-256 of the exact bytes, in hex, the same on node:crypto and Web Crypto', async () => {
    const body = JSON.stringify(settled(1)).replace('{', '{ ')
    const providers = [nodeCryptoProvider(nodeCrypto, Buffer), subtleCryptoProvider(globalThis.crypto.subtle)]
    for (const provider of providers) {
      expect(await provider.digest(body)).toBe(sha(body))
      expect(await provider.digest(new TextEncoder().encode(body))).toBe(sha(body))
      expect(await provider.digest('é')).toBe(sha('é'))
    }
  })
})

describe('memoryStore: body digests', () => {
  it('keeps the claim’s digest with the claim and then with the done marker', () => {
    const store = memoryStore()
    const a = sha('a')
    const claim = store.claim('evt_1', 60_000, a)
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    expect(store.claim('evt_1', 60_000, sha('b'))).toMatchObject({ status: 'processing', digest: a })
    expect(store.complete('evt_1', claim.token)).toBe(true)
    expect(store.claim('evt_1', 60_000, sha('b'))).toEqual({ status: 'done', digest: a })
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'done', digest: a })
  })

  it('keeps a digest that is not 32 hex characters as it was given, and none for a claim without one', () => {
    const store = memoryStore()
    for (const [eventId, digest] of [
      ['evt_raw', 'not-hex-ABCDEF0123456789abcdef01'],
      ['evt_short', 'abc'],
      ['evt_upper', sha('x').toUpperCase()],
      ['evt_none', undefined],
    ] as const) {
      const claim = store.claim(eventId, 60_000, digest)
      if (claim.status !== 'claimed') throw new Error('expected a claim')
      store.complete(eventId, claim.token)
      const done: ClaimResult = store.claim(eventId, 60_000, 'other')
      expect(done).toEqual(digest === undefined ? { status: 'done' } : { status: 'done', digest })
    }
  })

  it('still forgets a marker with a digest once its retention ends, also years into the store’s life', () => {
    const time = { t: 1_000_000 }
    const retentionMs = 73 * 3_600_000
    const store = memoryStore({ now: () => time.t, retentionMs })
    time.t += 40 * 365 * 24 * 3_600_000 // expiries past 2^31 seconds from the store's start
    const claim = store.claim('evt_1', 60_000, sha('a'))
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    store.complete('evt_1', claim.token)
    time.t += retentionMs - 1000
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'done', digest: sha('a') })
    time.t += 2000
    expect(store.claim('evt_1', 60_000).status).toBe('claimed')
  })
})

describe('createWebhooks: a copy of a handled event with other bytes', () => {
  it('answers an identical copy as a plain duplicate and reports nothing, also when signed with another secret', async () => {
    const { webhooks, errors, runs } = receiver()
    const body = JSON.stringify(settled(100))
    expect((await deliver(webhooks, body)).status).toBe(200)
    for (const signWith of [secret, rotated]) {
      const copy = await deliver(webhooks, body, signWith)
      expect(copy.status).toBe(200)
      expect(JSON.parse(copy.body)).toMatchObject({ status: 'duplicate' })
    }
    expect(runs).toEqual([100])
    expect(errors).toEqual([])
  })

  it('answers it as a duplicate, runs nothing, and reports an EventConflictError with both digests', async () => {
    const { webhooks, errors, runs } = receiver()
    const first = JSON.stringify(settled(100))
    const second = JSON.stringify(settled(999))
    expect((await deliver(webhooks, first)).status).toBe(200)
    const copy = await deliver(webhooks, second)
    expect(copy.status).toBe(200)
    expect(JSON.parse(copy.body)).toEqual({ ok: true, event_id: 'evt_conflict', status: 'duplicate' })
    expect(runs).toEqual([100])
    expect(errors).toHaveLength(1)
    const conflict = errors[0] as EventConflictError
    expect(conflict).toBeInstanceOf(EventConflictError)
    expect(conflict).toMatchObject({
      code: 'event_conflict',
      status: 200,
      eventId: 'evt_conflict',
      eventType: 'transaction_settled',
      receivedDigest: sha(second),
      handledDigest: sha(first),
      inProgress: false,
    })
    // Only digests: nothing of either body (the amounts, the merchant) reaches the report.
    // (The digests themselves are hex and may hold "999" or "100": they are left out of that check.)
    expect(conflict.message.replace(/sha256 [0-9a-f]+/g, 'sha256 …')).not.toMatch(/999|100|merchant/)
    expect(conflict.message).toContain(sha(second))
  })

  it('answers a copy with other bytes 409 while the first body’s handlers run, and reports it in progress', async () => {
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret, store: memoryStore() })
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    webhooks.on('transaction_settled', () => held)
    webhooks.onError((error) => errors.push(error))
    const first = JSON.stringify(settled(100))
    const second = JSON.stringify(settled(999))
    const running = deliver(webhooks, first)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const copy = await deliver(webhooks, second)
    expect(copy.status).toBe(409)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({
      code: 'event_conflict',
      status: 409,
      inProgress: true,
      receivedDigest: sha(second),
      handledDigest: sha(first),
    })
    release()
    expect((await running).status).toBe(200)
  })

  it('logs the conflict with both digests as fields when there is no onError listener', async () => {
    const logged: { fields: LogFields; message: string }[] = []
    const logger = {
      info() {},
      warn() {},
      error: (fields: LogFields, message?: string) => logged.push({ fields, message: message ?? '' }),
    } as never
    const webhooks = createWebhooks({ secret, store: memoryStore(), logger })
    webhooks.on('transaction_settled', () => {})
    const first = JSON.stringify(settled(100))
    const second = JSON.stringify(settled(999))
    await deliver(webhooks, first)
    expect((await deliver(webhooks, second)).status).toBe(200)
    expect(logged).toHaveLength(1)
    expect(logged[0]?.fields).toEqual({
      code: 'event_conflict',
      status: 200,
      event_id: 'evt_conflict',
      event_type: 'transaction_settled',
      received_digest: sha(second),
      handled_digest: sha(first),
    })
    expect(logged[0]?.message).toMatch(/^\[payhooks\] 200 event_conflict: /)
  })

  it('works as before with a store that keeps no digest: a plain duplicate, nothing reported', async () => {
    const inner = memoryStore()
    // A store written before digests: it takes two arguments and answers without a digest.
    const legacy: WebhookStore = {
      claim: (eventId, leaseMs) => inner.claim(eventId, leaseMs),
      extend: (eventId, token, leaseMs) => inner.extend(eventId, token, leaseMs),
      complete: (eventId, token) => inner.complete(eventId, token),
      release: (eventId, token) => inner.release(eventId, token),
    }
    const { webhooks, errors, runs } = receiver(legacy)
    expect((await deliver(webhooks, JSON.stringify(settled(100)))).status).toBe(200)
    const copy = await deliver(webhooks, JSON.stringify(settled(999)))
    expect(copy.status).toBe(200)
    expect(JSON.parse(copy.body)).toMatchObject({ status: 'duplicate' })
    expect(runs).toEqual([100])
    expect(errors).toEqual([])
  })

  it('reports a dead letter replayed after the event was handled with other bytes: a duplicate, not run', async () => {
    const deadLetters = memoryDeadLetterStore()
    const errors: WebhookError[] = []
    const runs: number[] = []
    const webhooks = createWebhooks({ secret, store: memoryStore(), deadLetters })
    webhooks.on('transaction_settled', (event) => {
      runs.push(event.data.settlement_amount)
    })
    webhooks.onError((error) => errors.push(error))
    const handled = JSON.stringify(settled(100))
    const parked = JSON.stringify(settled(999))
    expect((await deliver(webhooks, handled)).status).toBe(200)
    const { headers } = await signedDelivery(parked, secret)
    await deadLetters.park({
      eventId: 'evt_conflict',
      eventType: 'transaction_settled',
      body: new TextEncoder().encode(parked),
      headers: { ...headers },
      code: 'handler_failed',
      reason: 'handler failed',
      createdAt: undefined,
      parkedAt: new Date(),
    })
    expect(await webhooks.replay('evt_conflict')).toEqual({ eventId: 'evt_conflict', status: 'duplicate' })
    expect(runs).toEqual([100])
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({
      code: 'event_conflict',
      receivedDigest: sha(parked),
      handledDigest: sha(handled),
    })
  })
})
