import { describe, expect, it, vi } from 'vitest'
import { HandlerError, HandlerTimeoutError, StoreError, type WebhookError } from '../errors/index.js'
import { TransactionAbortedError } from '../errors/transaction-aborted.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { TransactionOutcome, WebhookStore } from '../store.js'
import { deliverSettled, gate } from '../test-helpers/index.js'
import type { HandlerContext, VerifiedEvent } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_lease_test'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function setup<C extends object = {}>(options: Partial<WebhooksOptions<{}, C>> = {}) {
  const errors: WebhookError[] = []
  const warnings: string[] = []
  const logger = { error: (line: string) => warnings.push(line), warn: (line: string) => warnings.push(line) }
  const webhooks = createWebhooks<{}, C>({ secret, logger, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, warnings }
}

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

describe('lease renewal', () => {
  it('keeps the claim of a handler running three times its lease: retries meanwhile get 409, it runs once', async () => {
    const store = memoryStore()
    const extend = vi.spyOn(store, 'extend')
    // Leases long enough that a busy machine's late timer does not let the claim lapse between renewals.
    const { webhooks, errors } = setup({ store, leaseMs: 600, deadlineMs: 100 })
    let runs = 0
    let signal: AbortSignal | undefined
    let startedAt = Number.POSITIVE_INFINITY
    const release = gate()
    const finished = gate()
    webhooks.on('transaction_settled', async (_event, context) => {
      runs++
      startedAt = Date.now()
      signal = context.signal
      await release.promise
      finished.open()
    })
    const first = deliver(webhooks, 'evt_slow')
    const answers: number[] = []
    await vi.waitFor(() => expect(runs).toBe(1))
    // Retries for three leases, all while the handler still runs.
    while (Date.now() < startedAt + 1800) {
      await sleep(150)
      answers.push((await deliver(webhooks, 'evt_slow')).status)
    }
    release.open()
    expect((await first).status).toBe(503) // its deadline passed; the handler kept running
    expect(answers.length).toBeGreaterThan(3)
    expect(new Set(answers)).toEqual(new Set([409]))
    await finished.promise
    await vi.waitFor(async () => expect((await deliver(webhooks, 'evt_slow')).status).toBe(200))
    expect(runs).toBe(1)
    expect(signal?.aborted).toBe(false)
    expect(extend.mock.calls.length).toBeGreaterThanOrEqual(2)
    expect(errors.map((e) => e.code)).toEqual(['deadline_exceeded'])
  })

  it('stops renewing once the handlers finish', async () => {
    const store = memoryStore()
    const extend = vi.spyOn(store, 'extend')
    const { webhooks } = setup({ store, leaseMs: 90, deadlineMs: 30 })
    webhooks.onAny(() => sleep(100))
    expect((await webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_short' })).status).toBe('processed')
    const calls = extend.mock.calls.length
    expect(calls).toBeGreaterThanOrEqual(1)
    await sleep(200)
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
    const inner = memoryStore()
    let failures = 1
    let renewals = 0
    const store: WebhookStore = {
      ...inner,
      claim: (id, lease) => inner.claim(id, lease),
      extend: async (id, token, lease) => {
        if (failures-- > 0) throw new Error('connection reset')
        renewals++
        return inner.extend(id, token, lease)
      },
    }
    const { webhooks, errors } = setup({ store, leaseMs: 300, deadlineMs: 30 })
    let signal: AbortSignal | undefined
    webhooks.onAny(async (_event, context) => {
      signal = context.signal
      await vi.waitFor(() => expect(renewals).toBe(2), { timeout: 5000, interval: 10 })
    })
    expect((await webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_blip' })).status).toBe('processed')
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
    expect((await down.webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_down' })).status).toBe('processed')
    // Told to stop while the claim still held: the next renewal would have come too late.
    expect(claimWhenAborted).toBe('processing')
    expect(down.errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_down: connection reset',
      'store extend failed for evt_down: connection reset',
    ])
  })

  it('aborts the signal before the lease runs out when a renewal never answers', async () => {
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
    expect((await webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_hung' })).status).toBe('processed')
    expect(claimWhenAborted).toBe('processing')
    expect(errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_hung: renewal got no answer before the lease was nearly over',
    ])
  })

  it('warns once per store without extend, and aborts the signal when its lease runs out', async () => {
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
    expect((await webhooks.dispatch({ event_type: 'test_event', event_id: 'evt_legacy' })).status).toBe('processed')
    expect(aborted).toBe(true)
    expect(errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_legacy: lease of 60 ms ran out and the store has no extend() to renew it',
      'store complete failed for evt_legacy: claim lost before completion (its renewal failed, or close() released it); a retry may run the handlers again',
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
      await vi.waitFor(() => expect(signal?.aborted).toBe(true), { timeout: 2000, interval: 5 })
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
        timeout: 2000,
      })
      expect(runs).toBe(2)
    })
  }
})

describe('stores with transaction', () => {
  /** A memory store whose handlers write into a journal that only reaches `committed` with the done marker. */
  function journalStore(outcome?: TransactionOutcome | 'throw' | 'aborted' | 'connection lost') {
    const inner = memoryStore()
    const committed: string[] = []
    const released: string[] = []
    const store: WebhookStore<{ journal: string[] }> = {
      ...inner,
      claim: (id, lease) => inner.claim(id, lease),
      release: (id, token) => {
        released.push(id)
        return inner.release(id, token)
      },
      async transaction(eventId, token, work) {
        const journal: string[] = []
        const succeeded = await work({ journal })
        if (outcome === 'connection lost') throw new Error('Connection terminated unexpectedly')
        if (!succeeded) return 'rolled_back'
        if (outcome === 'throw') throw new Error('commit failed')
        if (outcome === 'aborted') throw new TransactionAbortedError('a handler left the transaction aborted')
        if (outcome) return outcome
        if (!inner.complete(eventId, token)) return 'lost'
        committed.push(...journal)
        return 'committed'
      },
    }
    return { store, committed, released }
  }

  it("runs the handlers inside it with the store's context and signal, and commits their writes with the marker", async () => {
    const { store, committed } = journalStore()
    const { webhooks } = setup({ store })
    webhooks.on('transaction_settled', (event, { journal, signal }) => {
      expect(signal.aborted).toBe(false)
      journal.push(event.event_id)
    })
    expect((await deliver(webhooks, 'evt_tx')).status).toBe(200)
    expect(committed).toEqual(['evt_tx'])
    const duplicate = await deliver(webhooks, 'evt_tx')
    expect(JSON.parse(duplicate.body).status).toBe('duplicate')
    expect(committed).toEqual(['evt_tx'])
  })

  it('answers 500 and releases the claim when a handler fails (rolled back)', async () => {
    const { store, committed, released } = journalStore()
    const { webhooks, errors } = setup({ store })
    webhooks.onAny((event, { journal }) => {
      journal.push(event.event_id)
      throw new Error('ledger down')
    })
    expect((await deliver(webhooks, 'evt_fail')).status).toBe(500)
    expect(committed).toEqual([])
    expect(released).toEqual(['evt_fail'])
    expect(errors[0]).toBeInstanceOf(HandlerError)
  })

  it('answers 503 without releasing when the claim was lost before the commit (nothing committed)', async () => {
    const { store, released } = journalStore('lost')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, 'evt_lost')).status).toBe(503)
    expect(released).toEqual([])
    expect(errors[0]?.message).toBe(
      "store complete failed for evt_lost: claim lost before commit (its lease ran out, as for a process frozen past it, and another delivery may have taken its event or ordering key; or close() released it); the handlers' writes were rolled back and a retry runs them again",
    )
  })

  it('answers 503 and releases the claim when the transaction itself fails', async () => {
    const { store, released } = journalStore('throw')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, 'evt_broken')).status).toBe(503)
    expect(released).toEqual(['evt_broken'])
    expect(errors[0]?.message).toBe('store transaction failed for evt_broken: commit failed')
  })

  it('answers a TransactionAbortedError as a handler failure (500, claim released), not a store failure', async () => {
    const { store, committed, released } = journalStore('aborted')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    const answer = await deliver(webhooks, 'evt_aborted')
    expect(answer.status).toBe(500)
    expect(JSON.parse(answer.body).error).toBe('handler_failed')
    expect(committed).toEqual([])
    expect(released).toEqual(['evt_aborted'])
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(HandlerError)
    expect(errors[0]?.message).toBe(
      'handler failed for transaction_settled evt_aborted: a handler left the transaction aborted',
    )
    expect(errors[0]?.cause).toMatchObject({ code: 'transaction_aborted' })
  })

  it('answers 503 when the store fails even though a handler failed with it (its connection was lost)', async () => {
    const { store, released } = journalStore('connection lost')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {
      throw new Error('terminating connection due to administrator command')
    })
    const answer = await deliver(webhooks, 'evt_cut')
    expect(answer.status).toBe(503)
    expect(released).toEqual(['evt_cut'])
    expect(errors.map((e) => e.message)).toEqual([
      'store transaction failed for evt_cut: Connection terminated unexpectedly',
    ])
  })
})

describe('close() and running handlers', () => {
  it('aborts the signals of handlers still running at its timeout and releases their claims for the retry', async () => {
    const store = memoryStore()
    const shutdown = vi.fn()
    const { webhooks, errors } = setup({ store: { ...store, shutdown }, deadlineMs: 20 })
    let reason: unknown
    webhooks.onAny(
      (_event, { signal }) =>
        new Promise((_resolve, reject) => {
          signal.addEventListener('abort', () => {
            reason = signal.reason
            reject(signal.reason)
          })
        }),
    )
    webhooks.onAny(() => new Promise(() => {})) // ignores its signal
    expect((await deliver(webhooks, 'evt_stuck')).status).toBe(503)
    await webhooks.close({ timeoutMs: 30 })
    expect(reason).toMatchObject({ code: 'closing' })
    expect(shutdown).toHaveBeenCalledOnce()
    expect(errors.map((e) => e.code)).toEqual(['deadline_exceeded'])

    // The claim is free: the service's retry, reaching another receiver on the same store, runs the event.
    const { webhooks: next } = setup({ store })
    const handled: string[] = []
    next.onAny((event: VerifiedEvent) => {
      handled.push(event.event_id)
    })
    expect((await deliver(next, 'evt_stuck')).status).toBe(200)
    expect(handled).toEqual(['evt_stuck'])
  })

  it('leaves the signals of handlers that finish in time alone', async () => {
    const { webhooks } = setup()
    let signal: AbortSignal | undefined
    webhooks.onAny(async (_event, context) => {
      signal = context.signal
      await sleep(20)
    })
    const delivery = deliver(webhooks, 'evt_quick')
    await vi.waitFor(() => expect(signal).toBeDefined())
    await webhooks.close({ timeoutMs: 1000 })
    expect((await delivery).status).toBe(200)
    expect(signal?.aborted).toBe(false)
  })

  it('releases at once a claim taken after its timeout, answering 503 closing', async () => {
    const inner = memoryStore()
    const claimGate = gate()
    const store: WebhookStore = {
      ...inner,
      claim: async (id, lease) => {
        await claimGate.promise
        return inner.claim(id, lease)
      },
    }
    const { webhooks } = setup({ store, deadlineMs: 200 })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const delivery = deliver(webhooks, 'evt_late_claim')
    await sleep(10)
    await webhooks.close({ timeoutMs: 10 })
    claimGate.open()
    const answer = await delivery
    expect(answer.status).toBe(503)
    expect(JSON.parse(answer.body).error).toBe('closing')
    expect(handler).not.toHaveBeenCalled()
    expect(inner.claim('evt_late_claim', 60_000).status).toBe('claimed')
  })
})

describe('maxRunMs', () => {
  it('aborts the signal of handlers that ignore it and reports them, but keeps renewing the claim: the event runs once', async () => {
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
    expect((await deliver(webhooks, 'evt_hung')).status).toBe(503) // deadline_exceeded; still running
    await vi.waitFor(() => expect(signal?.aborted).toBe(true), { timeout: 2000, interval: 10 })
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
      await sleep(60)
      answers.push((await deliver(webhooks, 'evt_hung')).status)
    }
    expect(extend.mock.calls.length).toBeGreaterThan(renewals)
    expect(new Set(answers)).toEqual(new Set([409]))
    expect(runs).toBe(1)
    stuck.open()
    // It settled: done, so the next retry is a duplicate.
    await vi.waitFor(async () => expect((await deliver(webhooks, 'evt_hung')).status).toBe(200))
    expect(runs).toBe(1)
    const calls = extend.mock.calls.length
    await sleep(100)
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
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toContain('handler_failed'), { timeout: 2000 })
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
    await vi.waitFor(() => expect(errors.map((e) => e.code)).toEqual(['handler_timeout']), { timeout: 2000 })
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
