// maxConcurrentEvents: events beyond it wait for a slot, claiming nothing, and are answered 503 `busy` if none
// frees in time to finish before their deadline; the default comes from the store.
import { sampleEvent } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { BusyError, ClosingError, type WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'
import { driveClock, settleOnClock } from '../test-helpers/clock.js'
import { deliverSettled, gate } from '../test-helpers/index.js'
import type { VerifiedEvent } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_concurrency_test'

function setup(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const store = memoryStore()
  const webhooks = createWebhooks({ secret, store, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, store }
}

const deliver = (webhooks: ReturnType<typeof setup>['webhooks'], eventId: string) =>
  deliverSettled(webhooks, eventId, secret)
const queued = (eventId: string) => sampleEvent('transaction_settled', { eventId }) as VerifiedEvent

describe('maxConcurrentEvents', () => {
  it('lets a delivery beyond it wait, claiming nothing, and run once a slot frees', async () => {
    // The first run's time (about 50 ms, longer on a loaded machine) becomes the expected run, and the waiter is
    // refused busy instead of run if its deadline then leaves less than 1.5 times that: a 0.8 s run with a 2 s
    // deadline, 3.6 s with 9 s.
    const { webhooks, store, errors } = setup({ maxConcurrentEvents: 1, deadlineMs: 9000 })
    const held = gate()
    const started: string[] = []
    webhooks.onAny(async (event) => {
      started.push(event.event_id)
      if (event.event_id === 'evt_first') await held.promise
    })
    const first = deliver(webhooks, 'evt_first')
    const second = deliver(webhooks, 'evt_second')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(started).toEqual(['evt_first'])
    expect(store.claim('evt_second', 1000)).toMatchObject({ status: 'claimed' }) // nothing claimed it meanwhile
    held.open()
    expect((await first).status).toBe(200)
    // The probe's own claim on evt_second makes the waiting delivery find it in progress: it did not claim before.
    expect((await second).status).toBe(409)
    expect(started).toEqual(['evt_first'])
    expect(errors).toEqual([])
  })

  it('runs waiting deliveries in arrival order as slots free, all handled', async () => {
    // One event type taking both slots: no bulkhead between types. Arrival order holds while the oldest waiter has
    // waited under a quarter of its deadline (then the newest goes first: slots.test.ts): 2.25 s here, against about
    // 80 ms of waits, which a loaded machine stretched past the 500 ms a 2 s deadline gave.
    const { webhooks, errors } = setup({ maxConcurrentEvents: 2, deadlineMs: 9000, bulkheads: false })
    let running = 0
    let most = 0
    const order: string[] = []
    webhooks.onAny(async (event) => {
      order.push(event.event_id)
      most = Math.max(most, ++running)
      await new Promise((resolve) => setTimeout(resolve, 20))
      running--
    })
    const ids = Array.from({ length: 8 }, (_, i) => `evt_${i}`)
    const answers = await Promise.all(ids.map((id) => deliver(webhooks, id)))
    expect(answers.map((a) => a.status)).toEqual(ids.map(() => 200))
    expect(most).toBe(2)
    expect(order).toEqual(ids)
    expect(errors).toEqual([])
  })

  it('answers 503 busy with retry-after at the deadline when no slot frees, running and claiming nothing', async () => {
    const { webhooks, store, errors } = setup({ maxConcurrentEvents: 1, deadlineMs: 150 })
    const held = gate()
    const started: string[] = []
    webhooks.onAny(async (event) => {
      started.push(event.event_id)
      await held.promise
    })
    const first = deliver(webhooks, 'evt_holding')
    const startedAt = Date.now()
    const busy = await deliver(webhooks, 'evt_waiting')
    const waited = Date.now() - startedAt
    expect(busy.status).toBe(503)
    expect(busy.headers['retry-after']).toBe('60')
    expect(JSON.parse(busy.body)).toEqual({
      error: 'busy',
      message: 'receiver is handling as many events as it may at once; retry later',
    })
    expect(waited).toBeGreaterThanOrEqual(100)
    expect((await first).status).toBe(503) // deadline_exceeded: still running
    held.open()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(started).toEqual(['evt_holding'])
    expect(store.claim('evt_waiting', 1000)).toMatchObject({ status: 'claimed' })
    const busyError = errors.find((e) => e.code === 'busy')
    expect(busyError).toBeInstanceOf(BusyError)
    expect(busyError?.message).toBe(
      'no free slot among maxConcurrentEvents (1) before the deadline for transaction_settled evt_waiting; nothing claimed or run',
    )
    // The withdrawn wait gave nothing back twice: one slot, one event at a time still. (Queue dispatches, which
    // have no deadline: a delivery would now be refused at once, the held run having made runs look too long.)
    const after = await Promise.all([webhooks.dispatch(queued('evt_a')), webhooks.dispatch(queued('evt_b'))])
    expect(after.map((a) => a.status)).toEqual(['processed', 'processed'])
    expect(started).toEqual(['evt_holding', 'evt_a', 'evt_b'])
  })

  it('under overload runs only what can finish in time: every run answered 200, the rest busy before the deadline', async () => {
    // On a clock the test drives: a run takes 300 ms of it, whatever the machine's load.
    driveClock()
    const { webhooks, errors } = setup({ maxConcurrentEvents: 1, deadlineMs: 1000 })
    const ran: string[] = []
    webhooks.onAny(async (event) => {
      ran.push(event.event_id)
      await new Promise((resolve) => setTimeout(resolve, 300))
    })
    expect((await settleOnClock(deliver(webhooks, 'evt_warm_up'))).value.status).toBe(200) // a run takes 300 ms
    const startedAt = Date.now()
    const ids = Array.from({ length: 10 }, (_, i) => `evt_${i}`)
    const { value: answers } = await settleOnClock(
      Promise.all(
        ids.map((id) => deliver(webhooks, id).then((answer) => ({ id, answer, after: Date.now() - startedAt }))),
      ),
    )
    const handled = answers.filter(({ id }) => ran.includes(id))
    // In arrival order, evt_3 would start 900 ms in and be answered 503 at the deadline, its run wasted.
    expect(handled.length).toBeGreaterThanOrEqual(2)
    expect(handled.map(({ answer }) => answer.status)).toEqual(handled.map(() => 200))
    expect(errors.filter((error) => error.code === 'deadline_exceeded')).toEqual([])
    const refused = answers.filter(({ id }) => !ran.includes(id))
    expect(refused.map(({ answer }) => JSON.parse(answer.body).error)).toEqual(refused.map(() => 'busy'))
    // Refused once they could no longer finish (about 600 ms in), not at the deadline.
    for (const { after } of refused) expect(after).toBeLessThan(900)
  })

  it('makes dispatch wait for a slot, without a deadline, and close() reject those still waiting', async () => {
    const { webhooks } = setup({ maxConcurrentEvents: 1 })
    const held = gate()
    webhooks.onAny(async () => {
      await held.promise
    })
    const first = webhooks.dispatch(queued('evt_job_1'))
    const second = webhooks.dispatch(queued('evt_job_2'))
    const closed = webhooks.close({ timeoutMs: 50 })
    await expect(second).rejects.toBeInstanceOf(ClosingError)
    held.open()
    await closed
    await expect(first).resolves.toEqual({ status: 'processed' })
  })

  it("defaults to the store's maxConcurrentEvents, and refuses a value that is not a positive integer", async () => {
    const store: WebhookStore = { ...memoryStore(), maxConcurrentEvents: 1 }
    const { webhooks } = setup({ store, deadlineMs: 100 })
    const held = gate()
    webhooks.onAny(() => held.promise)
    const first = deliver(webhooks, 'evt_one')
    expect((await deliver(webhooks, 'evt_two')).status).toBe(503)
    held.open()
    expect((await first).status).toBe(503)
    expect(() => setup({ maxConcurrentEvents: 0 })).toThrow(
      'createWebhooks: maxConcurrentEvents must be a positive integer',
    )
    expect(() => setup({ maxConcurrentEvents: 1.5 })).toThrow(RangeError)
    expect(() => setup({ store: { ...memoryStore(), maxConcurrentEvents: -1 } })).toThrow(RangeError)
    expect(() => setup({ maxConcurrentEvents: Number.POSITIVE_INFINITY })).not.toThrow()
  })
})
