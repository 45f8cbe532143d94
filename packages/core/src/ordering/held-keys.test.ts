// webhooks.heldKeys(): the ordering keys held now, from the store; undefined from a store that cannot list them;
// bounded in time.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { StoreError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'

const secret = 'whsec_held_keys_test'
const ordering = {
  transaction_settled: {
    key: (e: { data: { transaction_id: string } }) => e.data.transaction_id,
    at: (e: { data: { settlement_date: string } }) => e.data.settlement_date,
  },
}

async function deliverSettled(webhooks: { receive: (d: never) => Promise<unknown> }, transactionId: string) {
  const event = sampleEvent('transaction_settled', { data: { transaction_id: transactionId } })
  const { body, headers } = await signedDelivery(JSON.stringify(event), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  void webhooks.receive({ method: 'POST', body, getHeader } as never)
  return event
}

/** Waits, 10 s at most, until `count` keys are held. */
const heldCount = (webhooks: { heldKeys(): Promise<unknown[] | undefined> }, count: number) =>
  vi.waitFor(async () => expect(await webhooks.heldKeys()).toHaveLength(count), { timeout: 10_000, interval: 5 })

describe('webhooks.heldKeys()', () => {
  it('lists the key a running handler holds, with its event, then nothing once it is done', async () => {
    let finish = () => {}
    const webhooks = createWebhooks({ secret, store: memoryStore(), ordering, checkAtStart: false })
    webhooks.on(
      'transaction_settled',
      () =>
        new Promise<void>((resolve) => {
          finish = resolve
        }),
    )
    expect(await webhooks.heldKeys()).toEqual([])
    const before = Date.now()
    const event = await deliverSettled(webhooks, 'txn_held')
    await heldCount(webhooks, 1)
    const [held, ...rest] = (await webhooks.heldKeys({ limit: 10 })) ?? []
    expect(rest).toEqual([])
    expect(held).toMatchObject({ key: 'txn_held', eventId: event.event_id, eventType: 'transaction_settled' })
    expect(held?.since.getTime()).toBeGreaterThanOrEqual(before)
    expect(held?.expiresAt.getTime()).toBeGreaterThan(Date.now())
    expect(held?.token).toBeGreaterThan(0)
    finish()
    await heldCount(webhooks, 0)
    expect(await webhooks.heldKeys()).toEqual([])
    await webhooks.close()
  })

  it('resolves undefined when the store cannot list held keys', async () => {
    const { heldKeys: _, ...store } = memoryStore()
    const webhooks = createWebhooks({ secret, store: store as WebhookStore, checkAtStart: false })
    expect(await webhooks.heldKeys()).toBeUndefined()
  })

  it('passes the limit (default 100) and refuses one outside 1 to 1000', async () => {
    const limits: number[] = []
    const store: WebhookStore = {
      ...memoryStore(),
      heldKeys: ({ limit }) => {
        limits.push(limit)
        return []
      },
    }
    const webhooks = createWebhooks({ secret, store, checkAtStart: false })
    await webhooks.heldKeys()
    await webhooks.heldKeys({ limit: 1000 })
    expect(limits).toEqual([100, 1000])
    await expect(webhooks.heldKeys({ limit: 1001 })).rejects.toThrow('heldKeys: limit must be at most 1000')
    await expect(webhooks.heldKeys({ limit: 0 })).rejects.toThrow('heldKeys: limit must be a positive integer')
  })

  it('rejects with a StoreError when the store fails or does not answer within timeoutMs', async () => {
    const failing: WebhookStore = {
      ...memoryStore(),
      heldKeys: () => Promise.reject(new Error('connection refused')),
    }
    const failed = createWebhooks({ secret, store: failing, checkAtStart: false }).heldKeys()
    await expect(failed).rejects.toBeInstanceOf(StoreError)
    await expect(failed).rejects.toThrow('store held keys failed: connection refused')
    const hanging: WebhookStore = { ...memoryStore(), heldKeys: () => new Promise(() => {}) }
    const started = Date.now()
    const slow = createWebhooks({ secret, store: hanging, checkAtStart: false }).heldKeys({ timeoutMs: 50 })
    await expect(slow).rejects.toThrow('store held keys failed: no answer within 50 ms')
    expect(Date.now() - started).toBeLessThan(2000)
  })
})
