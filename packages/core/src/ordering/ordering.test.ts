import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { memoryDeadLetterStore } from '../dead-letters/index.js'
import type { WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'
import { gate } from '../test-helpers/index.js'
import type { WebhookResult } from '../types.js'
import type { Ordering } from './index.js'

const secret = 'whsec_ordering_test'
const byTransaction = { key: (e: { data: { transaction_id: string } }) => e.data.transaction_id }
const ordering = {
  transaction_settled: { ...byTransaction, at: (e: { data: { settlement_date: string } }) => e.data.settlement_date },
  transaction_returned: { ...byTransaction, at: (e: { data: { settlement_date: string } }) => e.data.settlement_date },
}

function event(type: 'transaction_settled' | 'transaction_returned', transactionId: string, settlementDate: string) {
  return sampleEvent(type, { data: { transaction_id: transactionId, settlement_date: settlementDate } })
}

async function deliver(webhooks: { receive: (d: never) => Promise<WebhookResult> }, message: object) {
  const { body, headers } = await signedDelivery(JSON.stringify(message), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  return webhooks.receive({ method: 'POST', body, getHeader } as never)
}

/** The recipe's receiver: a status per transaction, a settlement never overwriting a later return. */
function receiver(store: WebhookStore = memoryStore()) {
  const status = new Map<string, string>()
  const seen: (Ordering | undefined)[] = []
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({ secret, store, ordering })
  webhooks.on('transaction_settled', (e) => void status.set(e.data.transaction_id, 'settled'), { skipSuperseded: true })
  webhooks.on('transaction_returned', (e) => void status.set(e.data.transaction_id, 'returned'), {
    skipSuperseded: true,
  })
  webhooks.onAny((_event, context) => void seen.push(context.ordering))
  webhooks.onError((error) => void errors.push(error))
  return { webhooks, status, seen, errors }
}

describe('ordering fences', () => {
  it('ends returned whichever of settled and returned comes first', async () => {
    for (const returnedFirst of [false, true]) {
      const { webhooks, status, seen } = receiver()
      const settled = event('transaction_settled', 'txn_a', '2026-11-03T08:00:00Z')
      const returned = event('transaction_returned', 'txn_a', '2026-11-05T08:00:00Z')
      const order = returnedFirst ? [returned, settled] : [settled, returned]
      for (const message of order) expect((await deliver(webhooks, message)).status).toBe(200)
      expect(status.get('txn_a')).toBe('returned')
      const last = seen[1] as Ordering
      expect(last.key).toBe('txn_a')
      expect(last.superseded).toBe(returnedFirst)
      if (returnedFirst) {
        expect(last.at).toBe(Date.parse('2026-11-03T08:00:00Z'))
        expect(last.newest).toEqual({
          eventType: 'transaction_returned',
          eventId: returned.event_id,
          at: Date.parse('2026-11-05T08:00:00Z'),
        })
      } else {
        expect(last.newest?.eventId).toBe(settled.event_id)
      }
    }
  })

  it('keeps the newest mark when a superseded event is handled, and other keys apart', async () => {
    const { webhooks, seen } = receiver()
    await deliver(webhooks, event('transaction_returned', 'txn_b', '2026-11-05T08:00:00Z'))
    await deliver(webhooks, event('transaction_settled', 'txn_b', '2026-11-03T08:00:00Z'))
    await deliver(webhooks, event('transaction_settled', 'txn_b', '2026-11-04T08:00:00Z'))
    await deliver(webhooks, event('transaction_settled', 'txn_c', '2026-11-01T08:00:00Z'))
    expect(seen.map((o) => o?.superseded)).toEqual([false, true, true, false])
    expect(seen[2]?.newest?.eventType).toBe('transaction_returned')
    expect(seen[3]?.newest).toBeUndefined()
  })

  it('runs the events of one key one at a time: a second one meanwhile is answered 409 in_progress and handled on retry', async () => {
    const store = memoryStore()
    const held = gate()
    const webhooks = createWebhooks({ secret, store, ordering })
    const seen: Ordering[] = []
    webhooks.on('transaction_settled', async (_e, context) => {
      seen.push(context.ordering as Ordering)
      await held.promise
    })
    webhooks.on('transaction_returned', (_e, context) => void seen.push(context.ordering as Ordering))
    const settled = event('transaction_settled', 'txn_d', '2026-11-03T08:00:00Z')
    const returned = event('transaction_returned', 'txn_d', '2026-11-05T08:00:00Z')
    const first = deliver(webhooks, settled)
    await new Promise((resolve) => setTimeout(resolve, 10))
    const meanwhile = await deliver(webhooks, returned)
    expect(meanwhile.status).toBe(409)
    expect(Number(meanwhile.headers['retry-after'])).toBeGreaterThan(0)
    held.open()
    expect((await first).status).toBe(200)
    expect((await deliver(webhooks, returned)).status).toBe(200)
    expect(seen.map((o) => o.newest?.eventId)).toEqual([undefined, settled.event_id])
  })

  it('keeps the key of a handler hung past maxRunMs until it settles; meanwhile the 409 names the key and since when', async () => {
    const store = memoryStore()
    const webhooks = createWebhooks({ secret, store, ordering, deadlineMs: 50, maxRunMs: 300 })
    const errors: WebhookError[] = []
    webhooks.onError((error) => void errors.push(error))
    const hung = event('transaction_settled', 'txn_h', '2026-11-03T08:00:00Z')
    const handled: string[] = []
    const stuck = gate()
    webhooks.on('transaction_settled', (e) =>
      e.event_id === hung.event_id ? stuck.promise : void handled.push(e.event_id),
    )
    const before = Date.now()
    expect((await deliver(webhooks, hung)).status).toBe(503) // deadline_exceeded; the handler goes on
    const next = event('transaction_settled', 'txn_h', '2026-11-04T08:00:00Z')
    const blocked = await deliver(webhooks, next)
    expect(blocked.status).toBe(409)
    const { error, message } = JSON.parse(blocked.body)
    expect(error).toBe('in_progress')
    const since = /^event (\S+) waits for ordering key "txn_h", held by another event since (\S+)$/.exec(message)
    expect(since?.[1]).toBe(next.event_id)
    const heldAt = Date.parse(since?.[2] ?? '')
    expect(heldAt).toBeGreaterThanOrEqual(before)
    expect(heldAt).toBeLessThanOrEqual(Date.now())
    // maxRunMs' timer: waited for, not given 100 ms more than it.
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toContain('handler_timeout'), {
      timeout: 10_000,
      interval: 10,
    })
    expect((await deliver(webhooks, next)).status).toBe(409) // still held past maxRunMs
    expect(handled).toEqual([])
    stuck.open()
    await vi.waitFor(async () => expect((await deliver(webhooks, next)).status).toBe(200))
    expect(handled).toEqual([next.event_id])
  })

  it('names the key in the 409 when the store does not say since when it is held', async () => {
    const inner = memoryStore()
    const store: WebhookStore = {
      ...inner,
      claim(id, lease, digest, position) {
        const claim = inner.claim(id, lease, digest, position)
        return claim.status === 'processing' ? { status: 'processing', retryAfterMs: claim.retryAfterMs } : claim
      },
    }
    const webhooks = createWebhooks({ secret, store, ordering })
    const held = gate()
    webhooks.on('transaction_settled', () => held.promise)
    const first = deliver(webhooks, event('transaction_settled', 'txn_k', '2026-11-03T08:00:00Z'))
    await new Promise((resolve) => setTimeout(resolve, 10))
    const next = event('transaction_settled', 'txn_k', '2026-11-04T08:00:00Z')
    const blocked = await deliver(webhooks, next)
    expect(JSON.parse(blocked.body).message).toBe(
      `event ${next.event_id}, or its ordering key "txn_k", is held by another delivery`,
    )
    held.open()
    expect((await first).status).toBe(200)
  })

  it("parks an event held back by its key on the service's last tries, instead of a last 409", async () => {
    const store = memoryStore()
    const deadLetters = { ...memoryDeadLetterStore(), durable: true }
    const webhooks = createWebhooks({ secret, store, ordering, deadLetters })
    const errors: WebhookError[] = []
    webhooks.onError((error) => void errors.push(error))
    const held = gate()
    webhooks.on('transaction_settled', () => held.promise)
    const first = deliver(webhooks, event('transaction_settled', 'txn_l', '2026-11-03T08:00:00Z'))
    await new Promise((resolve) => setTimeout(resolve, 10))
    const old = event('transaction_settled', 'txn_l', '2026-11-04T08:00:00Z')
    old.created_at = new Date(Date.now() - 71.5 * 3_600_000).toISOString() // on the service's last tries
    const parked = await deliver(webhooks, old)
    expect(parked.status).toBe(200)
    expect(JSON.parse(parked.body)).toMatchObject({ status: 'parked' })
    const letter = await deadLetters.get(old.event_id as string)
    expect(letter).toMatchObject({ code: 'handler_failed', status: 'parked' })
    expect(letter?.reason).toContain('ordering key "txn_l"')
    expect(errors.map((e) => e.code)).toEqual(['key_held'])
    // A fresh event of the key is not on its last tries: 409, the service retries it.
    expect((await deliver(webhooks, event('transaction_settled', 'txn_l', '2026-11-05T08:00:00Z'))).status).toBe(409)
    held.open()
    expect((await first).status).toBe(200)
  })

  it('frees the key when the handlers fail, leaving the mark where it was', async () => {
    const store = memoryStore()
    const webhooks = createWebhooks({ secret, store, ordering })
    const seen: Ordering[] = []
    let fail = true
    webhooks.on('transaction_returned', (_e, context) => {
      seen.push(context.ordering as Ordering)
      if (fail) throw new Error('ledger down')
    })
    webhooks.onError(() => {})
    const returned = event('transaction_returned', 'txn_e', '2026-11-05T08:00:00Z')
    expect((await deliver(webhooks, returned)).status).toBe(500)
    fail = false
    expect((await deliver(webhooks, returned)).status).toBe(200)
    expect(seen.map((o) => o.newest)).toEqual([undefined, undefined])
  })

  it('fails an event its rule cannot place (500, no handler run), and leaves types without a rule unfenced', async () => {
    const { webhooks, seen, errors, status } = receiver()
    const result = await deliver(webhooks, event('transaction_settled', 'txn_f', 'not a time'))
    expect(result.status).toBe(500)
    expect(result.body).not.toContain('ordering')
    expect(errors[0]?.code).toBe('handler_failed')
    expect(status.size).toBe(0)
    expect(seen).toEqual([])
    expect((await deliver(webhooks, sampleEvent('sale_created_from_batch'))).status).toBe(200)
    expect(seen).toEqual([undefined])
  })

  it('refuses at start a store that keeps no fences', () => {
    const inner = memoryStore()
    const plain: WebhookStore = {
      retentionMs: inner.retentionMs,
      claim: (id, lease, digest) => inner.claim(id, lease, digest),
      extend: (id, token, lease) => inner.extend(id, token, lease),
      complete: (id, token) => inner.complete(id, token),
      release: (id, token) => inner.release(id, token),
    }
    expect(() => createWebhooks({ secret, store: plain, ordering })).toThrow(
      'createWebhooks: store must keep ordering fences (store.ordering) for the ordering rules',
    )
    expect(() => createWebhooks({ secret, store: plain })).not.toThrow()
  })
})
