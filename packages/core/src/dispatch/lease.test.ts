import { describe, expect, it, vi } from 'vitest'
import { HandlerError, StoreError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import type { WebhookStore } from '../store.js'
import { driveClock } from '../test-helpers/clock.js'
import { deliverSettled, gate } from '../test-helpers/index.js'
import { recordingReceiver, sleep } from '../test-helpers/receiver.js'
import type { HandlerContext } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_lease_test'
const setup = (options: Partial<WebhooksOptions> = {}) => recordingReceiver(secret, options)
const deliver = (webhooks: ReturnType<typeof setup>['webhooks'], eventId: string) =>
  deliverSettled(webhooks, eventId, secret)

describe('handler context', () => {
  it('gives every handler of an event the same context, with a live signal', async () => {
    const { webhooks } = setup()
    const contexts: HandlerContext[] = []
    webhooks.on('transaction_settled', (_event, context) => {
      contexts.push(context)
    })
    webhooks.onAny((_event, context) => {
      contexts.push(context)
    })
    expect((await deliver(webhooks, 'evt_context')).status).toBe(200)
    expect(contexts).toHaveLength(2)
    expect(contexts[0]).toBe(contexts[1])
    expect(contexts[0]?.signal).toBeInstanceOf(AbortSignal)
    expect(contexts[0]?.signal.aborted).toBe(false)
  })

  it('gives queue-worker dispatches a context too', async () => {
    const { webhooks } = setup()
    let signal: AbortSignal | undefined
    webhooks.onAny((_event, context) => {
      signal = context.signal
    })
    expect(await webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_worker' })).toEqual({
      status: 'processed',
    })
    expect(signal).toBeInstanceOf(AbortSignal)
  })
})

// These run on a clock the test drives (test-helpers/clock.ts): a renewal is due every third of the lease, and no
// loaded machine's late timer can let a lease lapse between renewals or end a handler before one.
describe('lease renewal', () => {
  it('keeps the claim of a handler running three times its lease: retries meanwhile get 409, it runs once', async () => {
    driveClock()
    const store = memoryStore()
    const extend = vi.spyOn(store, 'extend')
    const { webhooks, errors } = setup({ store, leaseMs: 600, deadlineMs: 100 })
    let runs = 0
    let signal: AbortSignal | undefined
    const started = gate()
    const release = gate()
    const finished = gate()
    webhooks.on('transaction_settled', async (_event, context) => {
      runs++
      signal = context.signal
      started.open()
      await release.promise
      finished.open()
    })
    const first = deliver(webhooks, 'evt_slow')
    const answers: number[] = []
    await started.promise
    // Retries every 150 ms for three leases, all while the handler still runs.
    for (let elapsed = 0; elapsed < 1800; elapsed += 150) {
      await vi.advanceTimersByTimeAsync(150)
      answers.push((await deliver(webhooks, 'evt_slow')).status)
    }
    release.open()
    expect((await first).status).toBe(503) // its deadline passed; the handler kept running
    expect(answers).toHaveLength(12)
    expect(new Set(answers)).toEqual(new Set([409]))
    await finished.promise
    await vi.waitFor(async () => expect((await deliver(webhooks, 'evt_slow')).status).toBe(200))
    expect(runs).toBe(1)
    expect(signal?.aborted).toBe(false)
    expect(extend.mock.calls.length).toBe(9) // every 200 ms over 1800
    expect(errors.map((e) => e.code)).toEqual(['deadline_exceeded'])
  })

  it('stops renewing once the handlers finish', async () => {
    driveClock()
    const store = memoryStore()
    const extend = vi.spyOn(store, 'extend')
    const { webhooks } = setup({ store, leaseMs: 90, deadlineMs: 30 })
    webhooks.onAny(() => sleep(100))
    const dispatched = webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_short' })
    await vi.advanceTimersByTimeAsync(100)
    expect((await dispatched).status).toBe('processed')
    const calls = extend.mock.calls.length
    expect(calls).toBe(3) // at 30, 60 and 90 ms
    await vi.advanceTimersByTimeAsync(200)
    expect(extend.mock.calls.length).toBe(calls)
  })

  it('aborts the signal and reports a StoreError when the claim was taken over', async () => {
    const inner = memoryStore()
    const store: WebhookStore = { ...inner, claim: (id, lease) => inner.claim(id, lease), extend: () => false }
    const { webhooks, errors } = setup({ store, leaseMs: 60, deadlineMs: 30 })
    const stopped = gate()
    let reason: unknown
    webhooks.onAny(async (_event, { signal }) => {
      signal.addEventListener('abort', () => {
        reason = signal.reason
        stopped.open()
      })
      await stopped.promise
      throw new Error('stopped on abort')
    })
    await expect(webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_taken' })).rejects.toBeInstanceOf(
      HandlerError,
    )
    expect(reason).toBeInstanceOf(StoreError)
    expect((reason as StoreError).message).toBe(
      'store extend failed for evt_taken: claim lost: its lease ran out and another delivery took it',
    )
    expect(errors).toEqual([reason])
  })

  it('keeps the signal live through a passing store failure, and aborts it before the lease runs out otherwise', async () => {
    driveClock()
    const inner = memoryStore()
    let failures = 1
    let renewals = 0
    const renewedTwice = gate()
    const store: WebhookStore = {
      ...inner,
      claim: (id, lease) => inner.claim(id, lease),
      extend: async (id, token, lease) => {
        if (failures-- > 0) throw new Error('connection reset')
        if (++renewals === 2) renewedTwice.open()
        return inner.extend(id, token, lease)
      },
    }
    // Renewals at 100 (fails: the lease still runs at the next), 200 and 300 ms.
    const { webhooks, errors } = setup({ store, leaseMs: 300, deadlineMs: 30 })
    let signal: AbortSignal | undefined
    webhooks.onAny(async (_event, context) => {
      signal = context.signal
      await renewedTwice.promise
    })
    const blip = webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_blip' })
    await vi.advanceTimersByTimeAsync(300)
    expect((await blip).status).toBe('processed')
    expect(signal?.aborted).toBe(false)
    expect(errors.map((e) => e.message)).toEqual(['store extend failed for evt_blip: connection reset'])

    failures = Number.POSITIVE_INFINITY
    errors.length = 0
    const down = setup({ store, leaseMs: 600, deadlineMs: 30 })
    let claimWhenAborted: string | undefined
    down.webhooks.onAny(async (_event, context) => {
      await new Promise((resolve) => context.signal.addEventListener('abort', resolve))
      claimWhenAborted = inner.claim('evt_down', 1).status
    })
    // Renewals at 200 (fails, reported) and 400 ms (fails with no try left before the lease ends at 600).
    const dispatched = down.webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_down' })
    await vi.advanceTimersByTimeAsync(600)
    expect((await dispatched).status).toBe('processed')
    // Told to stop while the claim still held: the next renewal would have come too late.
    expect(claimWhenAborted).toBe('processing')
    expect(down.errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_down: connection reset',
      'store extend failed for evt_down: connection reset',
    ])
  })

  it('aborts the signal before the lease runs out when a renewal never answers', async () => {
    driveClock()
    const inner = memoryStore()
    const store: WebhookStore = {
      ...inner,
      claim: (id, lease) => inner.claim(id, lease),
      extend: () => new Promise<boolean>(() => {}), // a pool with no free connection, say
    }
    const { webhooks, errors } = setup({ store, leaseMs: 600, deadlineMs: 30 })
    let claimWhenAborted: string | undefined
    webhooks.onAny(async (_event, { signal }) => {
      await new Promise((resolve) => signal.addEventListener('abort', resolve))
      claimWhenAborted = inner.claim('evt_hung', 1).status
    })
    // The renewal at 200 ms never answers; the watchdog tells the handlers at 500, before the lease ends at 600.
    const dispatched = webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_hung' })
    await vi.advanceTimersByTimeAsync(600)
    expect((await dispatched).status).toBe('processed')
    expect(claimWhenAborted).toBe('processing')
    expect(errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_hung: renewal got no answer before the lease was nearly over',
    ])
  })

  it('warns once per store without extend, and aborts the signal when its lease runs out', async () => {
    driveClock()
    const inner = memoryStore()
    const legacy: WebhookStore = {
      claim: (id, lease) => inner.claim(id, lease),
      complete: (id, token) => inner.complete(id, token),
      release: (id, token) => inner.release(id, token),
    }
    const { webhooks, warnings, errors } = setup({ store: legacy, leaseMs: 60, deadlineMs: 30 })
    setup({ store: legacy, leaseMs: 60, deadlineMs: 30 })
    expect(warnings).toEqual([
      '[payhooks] the store has no extend(): claims cannot be renewed, so handlers running longer than leaseMs (60 ms) may run twice. Add extend() to the store (see "Writing a store").',
    ])
    expect(setup({ store: memoryStore() }).warnings).toEqual([])

    let aborted = false
    webhooks.onAny(async (_event, { signal }) => {
      await sleep(120)
      aborted = signal.aborted
    })
    const dispatched = webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_legacy' })
    await vi.advanceTimersByTimeAsync(120)
    expect((await dispatched).status).toBe('processed')
    expect(aborted).toBe(true)
    expect(errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_legacy: lease of 60 ms ran out and the store has no extend() to renew it',
      'store complete failed for evt_legacy: claim lost before completion (its renewal failed); a retry may run the handlers again',
    ])
  })
})

describe('a run whose lease lapsed while its handlers still run', () => {
  /** A memory store whose renewals are refused: the run loses its claim at its first renewal, the handlers go on. */
  function lapsingStore(transactions = false) {
    const inner = memoryStore()
    const claims: string[] = []
    const store: WebhookStore<{}> = {
      ...inner,
      claim(id, lease, digest, position) {
        claims.push(id)
        return inner.claim(id, lease, digest, position)
      },
      extend: () => false,
      ...(transactions && {
        async transaction(eventId, token, work) {
          if (!(await work({}))) return 'rolled_back'
          return inner.complete(eventId, token) ? 'committed' : 'lost'
        },
      }),
    }
    return { store, claims }
  }

  for (const transactions of [false, true]) {
    it(`holds its event in this process: copies are answered 409 without a claim, the handlers run once${transactions ? ' (store with transaction)' : ''}`, async () => {
      const { store, claims } = lapsingStore(transactions)
      const { webhooks, errors } = setup({ store, leaseMs: 60, deadlineMs: 30 })
      let runs = 0
      let signal: AbortSignal | undefined
      const stuck = gate()
      webhooks.onAny(async (_event, context) => {
        runs++
        signal = context.signal
        await stuck.promise // ignores its signal
      })
      expect((await deliver(webhooks, 'evt_lapsed')).status).toBe(503) // deadline_exceeded; still running
      await vi.waitFor(() => expect(signal?.aborted).toBe(true), { timeout: 10_000, interval: 5 })
      expect(signal?.reason).toBeInstanceOf(StoreError)
      // Past the lease the store would grant the event again; this process still runs it.
      await sleep(120)
      const answers: number[] = []
      for (let i = 0; i < 3; i++) answers.push((await deliver(webhooks, 'evt_lapsed')).status)
      expect(answers).toEqual([409, 409, 409])
      expect(await webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_lapsed' })).toMatchObject({
        status: 'in_progress',
      })
      // A copy with other bytes is refused too, and reported as a conflict with the body being handled.
      const minuteAgo = new Date(Date.now() - 60_000).toISOString()
      const other = await deliverSettled(webhooks, 'evt_lapsed', secret, minuteAgo)
      expect(other.status).toBe(409)
      expect(errors.find((error) => error.code === 'event_conflict')).toMatchObject({ inProgress: true })
      expect(claims).toEqual(['evt_lapsed'])
      expect(runs).toBe(1)
      stuck.open()
      // Once the handlers settled, the event is the store's again: the lost claim could not mark it done (with a
      // transaction, the writes were rolled back), so a retry runs it, after the first run and not beside it.
      await vi.waitFor(async () => expect((await deliver(webhooks, 'evt_lapsed')).status).toBe(200), {
        timeout: 10_000,
      })
      expect(runs).toBe(2)
    })
  }
})
