import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { createWebhooks, memoryStore, type WebhookError, type WebhookStore } from '../index.js'
import { driveClock, settleOnClock } from '../test-helpers/clock.js'

const secret = 'whsec_done_marker_test'
// Retries renew the claim every third of the lease (DONE_MARKER_RETRY_DELAYS_MS, capped). On a clock the tests drive
// (the retries' timers and the memory store's leases alike): on a real one, a try a loaded machine made late by two
// thirds of the lease lost the claim (400 ms of 600; the 1.5 s lease only moved the bar to 1 s).
const LEASE_MS = 1500
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * A memory store whose done markers are refused while `refusing` (as a full or unreachable Redis would); its claims,
 * renewals and releases go through. Counts the tries of `complete`, and keeps the claims' tokens.
 */
function refusingStore() {
  const inner = memoryStore()
  const state = { refusing: true, completes: 0, tokens: new Map<string, string>() }
  const store: WebhookStore = {
    claim(eventId, leaseMs, digest) {
      const claim = inner.claim(eventId, leaseMs, digest)
      if (claim.status === 'claimed') state.tokens.set(eventId, claim.token)
      return claim
    },
    extend: (eventId, token, leaseMs) => inner.extend(eventId, token, leaseMs),
    complete(eventId, token) {
      state.completes++
      if (state.refusing) throw new Error('OOM command not allowed when used memory > maxmemory')
      return inner.complete(eventId, token)
    },
    release: (eventId, token) => inner.release(eventId, token),
  }
  return { inner, state, store }
}

async function setup() {
  const { inner, state, store } = refusingStore()
  const errors: WebhookError[] = []
  const warnings: { fields: Record<string, unknown>; message: string }[] = []
  const webhooks = createWebhooks({
    secret,
    store,
    leaseMs: LEASE_MS,
    deadlineMs: 200,
    logger: {
      error: () => {},
      warn: (fields: Record<string, unknown>, message?: string) =>
        void warnings.push({ fields, message: `${message}` }),
      info: () => {},
    },
  })
  webhooks.onError((error) => errors.push(error))
  let runs = 0
  webhooks.on('transaction_settled', async () => {
    runs++
    await sleep(10)
  })
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: 'evt_marker' }), secret)
  // On the driven clock: its handler's 10 ms pass as the clock is moved.
  const deliver = async () => {
    const { value: answer } = await settleOnClock(
      webhooks.receive({ body, getHeader: (name) => headers[name as never] }),
    )
    const { status, error } = JSON.parse(answer.body) as { status?: string; error?: string }
    return { http: answer.status, outcome: status ?? error }
  }
  return { inner, state, webhooks, errors, warnings, deliver, runs: () => runs }
}

const messages = (errors: WebhookError[]) => errors.map((error) => error.message)

describe('a done marker refused after the handlers succeeded', () => {
  it('is retried until written, its claim renewed meanwhile: copies past the lease are answered 409, never run', async () => {
    driveClock()
    const { state, errors, warnings, deliver, runs } = await setup()
    expect(await deliver()).toEqual({ http: 200, outcome: 'processed' })
    // Three leases later, the claim still holds the event: each copy is in progress, and the handler ran once.
    for (let i = 0; i < 3; i++) {
      await vi.advanceTimersByTimeAsync(LEASE_MS)
      expect(await deliver()).toEqual({ http: 409, outcome: 'in_progress' })
    }
    expect(runs()).toBe(1)
    expect(messages(errors)[0]).toBe(
      'store complete failed for evt_marker: OOM command not allowed when used memory > maxmemory; answered 200 processed (the handlers succeeded); the done marker is retried in the background, its claim held until it is written',
    )
    expect(messages(errors)[1]).toBe(
      'store complete failed for evt_marker: OOM command not allowed when used memory > maxmemory; the done marker was not written after 3 retries: its claim is held and the marker retried every 500 ms until it is',
    )
    expect(state.completes).toBeGreaterThan(4)

    state.refusing = false
    // The next try, a third of the lease at most away, writes it.
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    expect(warnings.find((line) => line.fields.code === 'done_marker_retried')).toBeDefined()
    expect(await deliver()).toEqual({ http: 200, outcome: 'duplicate' })
    expect(runs()).toBe(1)
    expect(errors).toHaveLength(2)
  })

  it('stops and says so when the claim is found lost, or when close() ends the tries', async () => {
    driveClock()
    const lost = await setup()
    expect((await lost.deliver()).http).toBe(200)
    // The claim goes (as a lease running out while the store could not renew it): the next failed try finds it lost.
    lost.inner.release('evt_marker', lost.state.tokens.get('evt_marker') as string)
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    expect(messages(lost.errors).at(-1)).toBe(
      'store complete failed for evt_marker: claim lost before the done marker was written (its lease ended); a retry of the service may run the handlers again',
    )
    const tries = lost.state.completes
    await vi.advanceTimersByTimeAsync(LEASE_MS)
    expect(lost.state.completes).toBe(tries)

    const closed = await setup()
    expect((await closed.deliver()).http).toBe(200)
    // close() waits this long for the retries before it ends them (10 s by default).
    await settleOnClock(closed.webhooks.close({ timeoutMs: 1000 }))
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    expect(messages(closed.errors).at(-1)).toBe(
      'store complete failed for evt_marker: the receiver closed before the done marker was written; a retry of the service may run the handlers again',
    )
    const closedTries = closed.state.completes
    await vi.advanceTimersByTimeAsync(LEASE_MS)
    expect(closed.state.completes).toBe(closedTries)
  })
})
