import { describe, expect, it } from 'vitest'
import { HandlerError, StoreError, type WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import { gate } from '../test-helpers/index.js'
import type { Webhooks } from '../types.js'
import { SIGNATURE_HEADER, sign } from '../verify/signature.js'
import { inProcessQueue } from './queue.js'

const SECRET = 'whsec_queue_test'

async function deliver(webhooks: Webhooks<unknown>, eventId: string) {
  const body = JSON.stringify({ event_type: 'test_event', event_id: eventId, data: { n: 1 } })
  const signature = await sign(SECRET, body)
  const result = await webhooks.receive({
    method: 'POST',
    body,
    getHeader: (name) => (name === SIGNATURE_HEADER ? signature : undefined),
  })
  return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
}

async function until(condition: () => boolean, what: string) {
  for (let i = 0; i < 1000; i++) {
    if (condition()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`timed out waiting for ${what}`)
}

function receiver(queue: ReturnType<typeof inProcessQueue>, store = memoryStore()) {
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({ secret: SECRET, store, queue })
  webhooks.onError((error) => errors.push(error))
  return { webhooks: webhooks as Webhooks<unknown>, errors }
}

describe('inProcessQueue', () => {
  it('acknowledges with 200 queued before any handler starts, then runs the handlers', async () => {
    const queue = inProcessQueue()
    const { webhooks, errors } = receiver(queue)
    const release = gate()
    let started = 0
    let finished = 0
    webhooks.on('test_event', async () => {
      started++
      await release.promise
      finished++
    })

    for (const id of ['evt_1', 'evt_2', 'evt_3']) {
      const answer = await deliver(webhooks, id)
      expect(answer).toEqual({ status: 200, body: { ok: true, event_id: id, status: 'queued' } })
      expect(started).toBe(0)
    }
    expect(queue.pending).toBe(3)
    await until(() => started === 3, 'the handlers to start')
    expect(finished).toBe(0)
    release.open()
    await queue.drain()
    expect(finished).toBe(3)
    expect(queue.pending).toBe(0)
    expect(errors).toEqual([])
  })

  it('retries a failing handler with backoff and stops once it succeeds', async () => {
    const queue = inProcessQueue({ retries: 3, backoffMs: 5 })
    const { webhooks, errors } = receiver(queue)
    let calls = 0
    webhooks.on('test_event', () => {
      calls++
      if (calls < 3) throw new Error(`flaky ${calls}`)
    })

    expect((await deliver(webhooks, 'evt_flaky')).status).toBe(200)
    await queue.drain()
    expect(calls).toBe(3)
    expect(errors.map((e) => [e.constructor, e.message])).toEqual([
      [HandlerError, 'handler failed for test_event evt_flaky: flaky 1'],
      [HandlerError, 'handler failed for test_event evt_flaky: flaky 2'],
    ])
    // Done in the store: a redelivery is acknowledged and not run again.
    expect((await deliver(webhooks, 'evt_flaky')).status).toBe(200)
    await queue.drain()
    expect(calls).toBe(3)
  })

  it('gives up after the configured retries and reports every failure', async () => {
    const queue = inProcessQueue({ retries: 2, backoffMs: 1 })
    const { webhooks, errors } = receiver(queue)
    let calls = 0
    webhooks.on('test_event', () => {
      calls++
      throw new Error('always')
    })

    await deliver(webhooks, 'evt_doomed')
    await queue.drain()
    expect(calls).toBe(3)
    expect(errors).toHaveLength(3)
    expect(errors.every((e) => e instanceof HandlerError && e.eventId === 'evt_doomed')).toBe(true)
    expect(queue.pending).toBe(0)
  })

  it('runs an event once when it is delivered again while pending or after it was handled', async () => {
    const queue = inProcessQueue()
    const { webhooks } = receiver(queue)
    const release = gate()
    let calls = 0
    webhooks.on('test_event', async () => {
      calls++
      await release.promise
    })

    const answers = await Promise.all([1, 2, 3].map(() => deliver(webhooks, 'evt_dup')))
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
    expect(queue.pending).toBe(1)
    await until(() => calls === 1, 'the handler')
    expect((await deliver(webhooks, 'evt_dup')).status).toBe(200)
    release.open()
    await queue.drain()
    expect((await deliver(webhooks, 'evt_dup')).status).toBe(200)
    await queue.drain()
    expect(calls).toBe(1)
  })

  it('never runs more than `concurrency` events at once', async () => {
    const queue = inProcessQueue({ concurrency: 2 })
    const { webhooks } = receiver(queue)
    let running = 0
    let most = 0
    let done = 0
    webhooks.on('test_event', async () => {
      running++
      most = Math.max(most, running)
      await new Promise((resolve) => setTimeout(resolve, 10))
      running--
      done++
    })

    for (let i = 0; i < 6; i++) await deliver(webhooks, `evt_c${i}`)
    await queue.drain()
    expect(done).toBe(6)
    expect(most).toBe(2)
  })

  it('waits for another holder of the claim without using up retries', async () => {
    const store = memoryStore()
    const queue = inProcessQueue({ retries: 0 })
    const { webhooks, errors } = receiver(queue, store)
    let calls = 0
    webhooks.on('test_event', () => {
      calls++
    })
    const held = store.claim('evt_held', 60)
    expect(held.status).toBe('claimed')

    await deliver(webhooks, 'evt_held')
    await queue.drain()
    expect(calls).toBe(1)
    expect(errors).toEqual([])
  })

  it('answers 503 when full, so the service retries later', async () => {
    const queue = inProcessQueue({ maxPending: 1 })
    const { webhooks, errors } = receiver(queue)
    const release = gate()
    webhooks.on('test_event', () => release.promise)

    expect((await deliver(webhooks, 'evt_a')).status).toBe(200)
    const full = await deliver(webhooks, 'evt_b')
    expect(full.status).toBe(503)
    expect(full.body.error).toBe('store_unavailable')
    expect(errors[0]).toBeInstanceOf(StoreError)
    release.open()
    await queue.drain()
    expect((await deliver(webhooks, 'evt_b')).status).toBe(200)
    await queue.drain()
  })

  it('close() drops waiting events, lets running ones finish, and refuses new ones', async () => {
    const queue = inProcessQueue({ concurrency: 1 })
    const { webhooks } = receiver(queue)
    const release = gate()
    const handled: string[] = []
    webhooks.on('test_event', async (event) => {
      await release.promise
      handled.push(event.event_id)
    })

    await deliver(webhooks, 'evt_running')
    await deliver(webhooks, 'evt_waiting')
    await until(() => queue.pending === 2, 'both events')
    await new Promise((resolve) => setImmediate(resolve))
    const closed = queue.close()
    release.open()
    await closed
    expect(handled).toEqual(['evt_running'])
    expect(queue.pending).toBe(0)
    expect((await deliver(webhooks, 'evt_late')).status).toBe(503)
  })

  it('must be attached to exactly one receiver', async () => {
    const queue = inProcessQueue()
    await expect(queue.enqueue({ event_type: 'test_event', event_id: 'evt_x' })).rejects.toThrow(/not attached/)
    createWebhooks({ secret: SECRET, queue })
    expect(() => createWebhooks({ secret: SECRET, queue })).toThrow(/already attached/)
    expect(() => inProcessQueue({ concurrency: 0 })).toThrow(RangeError)
  })
})
