// close() on an instance whose handler ignores its signal: the run keeps its claim (renewed past several leases)
// until it settles, so the service's retry reaching another instance on the same Redis is answered 409 instead of
// running the handler beside it; once it settles, the event is done, once.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type WebhookError } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { gate } from '../../packages/core/src/test-helpers/index.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const secret = 'whsec_close_hung'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const clients: Redis[] = []
afterAll(async () => {
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())))
})

function redis(): Redis {
  const client = new Redis(process.env.REDIS_URL as string)
  client.on('error', () => {})
  clients.push(client)
  return client
}

async function deliver(webhooks: ReturnType<typeof createWebhooks>, message: object) {
  const { body, headers } = await signedDelivery(JSON.stringify(message), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  const answer = await webhooks.receive({ method: 'POST', body, getHeader })
  return { status: answer.status, body: JSON.parse(answer.body) as { error?: string; status?: string } }
}

describe('close() while a handler ignores its signal, two receivers on one Redis', () => {
  it('keeps renewing the run’s claim: a copy on the other receiver is answered 409, and the event is done once', async () => {
    const keyPrefix = `payhooks-close-hung:${randomUUID()}:`
    // The copies' answers (409 in_progress) take a store round trip on the other receiver: the deadline leaves a loaded
    // machine's 5x room and more (at 200 ms one could be answered deadline_exceeded); renewed every second, a renewal
    // may come 2 s late.
    const leaseMs = 3000
    const errors: WebhookError[] = []
    const receiver = () => {
      const webhooks = createWebhooks({
        secret,
        store: redisStore(redis(), { keyPrefix, ...UNHURRIED }),
        deadlineMs: 2000,
        leaseMs,
        checkAtStart: false,
        logger: { error() {}, warn() {} },
      })
      webhooks.onError((error) => void errors.push(error))
      return webhooks
    }
    const first = receiver()
    const second = receiver()
    const event = sampleEvent('transaction_settled', { eventId: `evt_close_hung_${randomUUID()}` })
    const runs: string[] = []
    let running = 0
    let overlapped = false
    const stuck = gate()
    const handler = (name: string, hangs: boolean) => async (received: { event_id: string }) => {
      if (received.event_id !== event.event_id) return
      runs.push(name)
      if (++running > 1) overlapped = true
      try {
        if (hangs) await stuck.promise // ignores context.signal
      } finally {
        running--
      }
    }
    first.on('transaction_settled', handler('first', true))
    second.on('transaction_settled', handler('second', false))
    // Each store's first calls (its scripts loaded) out of the way.
    for (const webhooks of [first, second]) {
      const warmUp = sampleEvent('transaction_settled', { eventId: `evt_warm_${randomUUID()}` })
      await vi.waitFor(async () => expect((await deliver(webhooks, warmUp)).status).toBe(200), { timeout: 20_000 })
    }

    try {
      expect((await deliver(first, event)).body.error).toBe('deadline_exceeded') // the handler goes on
      await first.close({ timeoutMs: 100 })
      expect(runs).toEqual(['first'])

      // The service's retry reaches the other instance: refused while the first instance's run goes on.
      expect(await deliver(second, event)).toMatchObject({ status: 409, body: { error: 'in_progress' } })
      // Past two leases: the closing instance renewed the claim all along.
      await sleep(2 * leaseMs)
      expect(await deliver(second, event)).toMatchObject({ status: 409, body: { error: 'in_progress' } })
      expect(runs).toEqual(['first'])
    } finally {
      stuck.open()
    }
    // Settled: the first instance marks the event done, and the next retry is a duplicate.
    await vi.waitFor(async () => expect((await deliver(second, event)).body.status).toBe('duplicate'), {
      timeout: 20_000,
      interval: 50,
    })
    expect(runs).toEqual(['first'])
    expect(overlapped).toBe(false)
    expect(errors.map((error) => error.code)).not.toContain('store_unavailable')
    await second.close({ timeoutMs: 1000 })
  }, 120_000)
})
