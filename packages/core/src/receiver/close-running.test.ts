import { describe, expect, it, vi } from 'vitest'
import { memoryStore } from '../memory/store.js'
import type { WebhookStore } from '../store.js'
import { deliverSettled, gate } from '../test-helpers/index.js'
import { recordingReceiver, sleep } from '../test-helpers/receiver.js'
import type { VerifiedEvent } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_lease_test'
const setup = (options: Partial<WebhooksOptions> = {}) => recordingReceiver(secret, options)
const deliver = (webhooks: ReturnType<typeof setup>['webhooks'], eventId: string) =>
  deliverSettled(webhooks, eventId, secret)

describe('close() and running handlers', () => {
  it('aborts the signals of handlers still running at its timeout, and keeps the claim of a run still going until it settles', async () => {
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
    const stuck = gate()
    webhooks.onAny(() => stuck.promise) // ignores its signal
    expect((await deliver(webhooks, 'evt_stuck')).status).toBe(503)
    await webhooks.close({ timeoutMs: 30 })
    expect(reason).toMatchObject({ code: 'closing' })
    expect(shutdown).not.toHaveBeenCalled()

    // The claim is still held: the service's retry, reaching another receiver on the same store, is answered 409.
    const { webhooks: next } = setup({ store })
    const handled: string[] = []
    next.onAny((event: VerifiedEvent) => {
      handled.push(event.event_id)
    })
    expect((await deliver(next, 'evt_stuck')).status).toBe(409)
    expect(handled).toEqual([])

    // Settled, in failure (one handler stopped on its signal): the claim released, then the store shut down.
    stuck.open()
    await vi.waitFor(() => expect(shutdown).toHaveBeenCalledOnce())
    expect(errors.map((e) => e.code)).toEqual(['deadline_exceeded', 'handler_failed'])
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
    // A deadline far past close(): the answer must be close()'s (at 200 ms, a loaded machine's timers could let the
    // deadline answer first).
    const { webhooks } = setup({ store, deadlineMs: 5000 })
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
