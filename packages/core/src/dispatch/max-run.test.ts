import { describe, expect, it, vi } from 'vitest'
import { HandlerTimeoutError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { driveClock } from '../test-helpers/clock.js'
import { deliverSettled, gate } from '../test-helpers/index.js'
import { recordingReceiver, sleep } from '../test-helpers/receiver.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_lease_test'
const setup = (options: Partial<WebhooksOptions> = {}) => recordingReceiver(secret, options)
const deliver = (webhooks: ReturnType<typeof setup>['webhooks'], eventId: string) =>
  deliverSettled(webhooks, eventId, secret)

describe('maxRunMs', () => {
  it('aborts the signal of handlers that ignore it and reports them, but keeps renewing the claim: the event runs once', async () => {
    // On a clock the test drives: renewals every 30 ms keep a 90 ms lease, however late a loaded machine's timers.
    driveClock()
    const store = memoryStore()
    const extend = vi.spyOn(store, 'extend')
    const { webhooks, errors } = setup({ store, deadlineMs: 50, leaseMs: 90, maxRunMs: 200 })
    let signal: AbortSignal | undefined
    let runs = 0
    const stuck = gate()
    webhooks.onAny(async (_event, context) => {
      runs++
      signal = context.signal
      await stuck.promise // ignores its signal
    })
    const first = deliver(webhooks, 'evt_hung')
    await vi.advanceTimersByTimeAsync(50)
    expect((await first).status).toBe(503) // deadline_exceeded; still running
    await vi.advanceTimersByTimeAsync(149)
    expect(signal?.aborted).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    expect(signal?.aborted).toBe(true)
    expect(signal?.reason).toBeInstanceOf(HandlerTimeoutError)
    const timedOut = errors.find((error) => error.code === 'handler_timeout')
    expect(timedOut).toBe(signal?.reason)
    expect(timedOut?.message).toBe(
      'handler failed for transaction_settled evt_hung: handlers still running after maxRunMs (200 ms): signal aborted; a handler that ignores it keeps the event (claim held) until it settles',
    )
    expect(timedOut).toMatchObject({ status: 500, afterResponse: true, maxRunMs: 200 })
    // Past maxRunMs and several leases: still renewed, still held.
    const renewals = extend.mock.calls.length
    const answers: number[] = []
    for (let i = 0; i < 5; i++) {
      await vi.advanceTimersByTimeAsync(60)
      answers.push((await deliver(webhooks, 'evt_hung')).status)
    }
    expect(extend.mock.calls.length).toBe(renewals + 10) // every 30 ms over 300
    expect(new Set(answers)).toEqual(new Set([409]))
    expect(runs).toBe(1)
    stuck.open()
    // It settled: done, so the next retry is a duplicate.
    await vi.waitFor(async () => expect((await deliver(webhooks, 'evt_hung')).status).toBe(200))
    expect(runs).toBe(1)
    const calls = extend.mock.calls.length
    await vi.advanceTimersByTimeAsync(100)
    expect(extend.mock.calls.length).toBe(calls) // renewal stopped once it settled
  })

  it('releases the event of a hung run that stops on its signal (throws), so the retry runs it', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 50, maxRunMs: 100 })
    let runs = 0
    webhooks.onAny((_event, { signal }) => {
      runs++
      if (runs > 1) return
      return new Promise<void>((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)))
    })
    expect((await deliver(webhooks, 'evt_stops')).status).toBe(503)
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toContain('handler_failed'), { timeout: 10_000 })
    expect(errors.map((e) => e.code)).toEqual(['deadline_exceeded', 'handler_timeout', 'handler_failed'])
    // Neither line says the claim is held: the run stopped, its claim released. The failure's prefix once.
    for (const error of errors) expect(error.message).not.toMatch(/claim held until they settle/)
    expect(errors[2]?.message).toBe(
      'handler failed for transaction_settled evt_stops: stopped on its signal, aborted at maxRunMs (100 ms); claim released for the next retry',
    )
    expect((await deliver(webhooks, 'evt_stops')).status).toBe(200)
    expect(runs).toBe(2)
  })

  it("keeps a queue worker's dispatch, and its slot, until a hung run settles", async () => {
    const { webhooks, errors } = setup({ deadlineMs: 50, maxRunMs: 100, maxConcurrentEvents: 1 })
    const ran: string[] = []
    const stuck = gate()
    webhooks.onAny(async (event) => {
      ran.push(event.event_id)
      if (event.event_id === 'evt_stuck') await stuck.promise
    })
    let done: string | undefined
    const first = webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_stuck' })
    const next = webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_next' })
    next.then(() => {
      done = 'next'
    })
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toEqual(['handler_timeout']), { timeout: 10_000 })
    await sleep(100)
    expect(done).toBeUndefined()
    expect(ran).toEqual(['evt_stuck']) // its slot still taken
    stuck.open()
    await expect(first).resolves.toEqual({ status: 'processed' })
    await expect(next).resolves.toEqual({ status: 'processed' })
    expect(ran).toEqual(['evt_stuck', 'evt_next'])
  })

  it('is refused when not longer than deadlineMs, and Infinity sets no limit', () => {
    expect(() => setup({ deadlineMs: 1000, maxRunMs: 1000 })).toThrow(
      'createWebhooks: maxRunMs must be above 1000 and at most 2147483647 (longer than deadlineMs, or Infinity)',
    )
    expect(() => setup({ maxRunMs: 3_000_000_000 })).toThrow(RangeError)
    expect(() => setup({ maxRunMs: Number.POSITIVE_INFINITY })).not.toThrow()
  })
})
