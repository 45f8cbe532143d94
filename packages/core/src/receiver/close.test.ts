import { sampleEvent, signedRequest } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { ClosingError, StoreError, type WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import type { WebhookStore } from '../store.js'
import { deliverSettled, gate } from '../test-helpers/index.js'
import type { VerifiedEvent } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import { createWebhooks } from './create.js'

const secret = 'whsec_close_test'

function setup(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const shutdown = vi.fn()
  const store: WebhookStore = { ...memoryStore(), shutdown }
  const webhooks = createWebhooks({ secret, store, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, shutdown }
}

const deliver = (webhooks: ReturnType<typeof setup>['webhooks'], eventId: string) =>
  deliverSettled(webhooks, eventId, secret)

describe('webhooks.close()', () => {
  it('answers new deliveries 503 closing with retry-after, runs no handler, and shuts the store down', async () => {
    const { webhooks, errors, shutdown } = setup()
    const handler = vi.fn()
    webhooks.onAny(handler)
    await webhooks.close()
    expect(shutdown).toHaveBeenCalledOnce()

    const answer = await deliver(webhooks, 'evt_late')
    expect(answer.status).toBe(503)
    expect(answer.headers['retry-after']).toBe('60')
    expect(JSON.parse(answer.body)).toEqual({ error: 'closing', message: 'receiver is shutting down; retry later' })
    const response = await webhooks.handle(await signedRequest(sampleEvent('transaction_settled'), secret))
    expect(response.status).toBe(503)
    expect(handler).not.toHaveBeenCalled()
    expect(errors).toHaveLength(2)
    expect(errors.every((e) => e instanceof ClosingError)).toBe(true)
  })

  it('waits for deliveries still running, then shuts the store down', async () => {
    const { webhooks, shutdown } = setup()
    const release = gate()
    let started = false
    let finished = false
    webhooks.on('transaction_settled', async () => {
      started = true
      await release.promise
      finished = true
    })
    const running = deliver(webhooks, 'evt_running')
    await vi.waitFor(() => expect(started).toBe(true))
    let closed = false
    const closing = webhooks.close().then(() => {
      closed = true
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(closed).toBe(false)
    expect(shutdown).not.toHaveBeenCalled()

    release.open()
    expect((await running).status).toBe(200)
    await closing
    expect(finished).toBe(true)
    expect(shutdown).toHaveBeenCalledOnce()
  })

  it('waits for handlers that outlived the deadline, whose event is then marked done', async () => {
    const { webhooks, shutdown } = setup({ deadlineMs: 20 })
    const release = gate()
    const completed: string[] = []
    webhooks.on('transaction_settled', async (event) => {
      await release.promise
      completed.push(event.event_id)
    })
    expect((await deliver(webhooks, 'evt_slow')).status).toBe(503)
    const closing = webhooks.close()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(shutdown).not.toHaveBeenCalled()
    release.open()
    await closing
    expect(completed).toEqual(['evt_slow'])
    expect(shutdown).toHaveBeenCalledOnce()
  })

  it('resolves after timeoutMs while a handler ignoring its signal still runs, and shuts the store down once it settles', async () => {
    const { webhooks, shutdown } = setup({ deadlineMs: 20 })
    const stuck = gate()
    webhooks.onAny(() => stuck.promise)
    expect((await deliver(webhooks, 'evt_stuck')).status).toBe(503)
    await webhooks.close({ timeoutMs: 30 })
    // The store still renews the run's claim.
    expect(shutdown).not.toHaveBeenCalled()
    stuck.open()
    await vi.waitFor(() => expect(shutdown).toHaveBeenCalledOnce())
  })

  it('waits within timeoutMs for a done marker retried in the background, and shuts the store down after it', async () => {
    const inner = memoryStore()
    const calls: string[] = []
    let failing = true
    const shutdown = vi.fn(() => void calls.push('shutdown'))
    const store: WebhookStore = {
      ...inner,
      complete(id, token) {
        calls.push(failing ? 'complete failed' : 'complete')
        if (failing) throw new Error('store down')
        return inner.complete(id, token)
      },
      shutdown,
    }
    const webhooks = createWebhooks({ secret, store, logger: { error() {}, warn() {} } })
    webhooks.onError(() => {})
    webhooks.onAny(() => {})
    // Answered 200 processed: the handlers succeeded; the marker is retried in 250 ms.
    expect((await deliver(webhooks, 'evt_marker')).status).toBe(200)
    failing = false
    await webhooks.close({ timeoutMs: 10_000 })
    expect(calls).toEqual(['complete failed', 'complete', 'shutdown'])
    expect(inner.claim('evt_marker', 60_000).status).toBe('done')
  })

  it('is idempotent: every call returns the same promise and the store is shut down once', async () => {
    const { webhooks, shutdown } = setup()
    const first = webhooks.close()
    expect(webhooks.close({ timeoutMs: 1 })).toBe(first)
    await first
    await webhooks.close()
    expect(shutdown).toHaveBeenCalledOnce()
  })

  it('waits for queue-worker dispatches and refuses new ones with ClosingError', async () => {
    const { webhooks, shutdown } = setup()
    const release = gate()
    webhooks.onAny(() => release.promise)
    const event: VerifiedEvent = { event_type: 'test_event', event_id: 'evt_worker' }
    const dispatching = webhooks.dispatch(event)
    const closing = webhooks.close()
    await expect(webhooks.dispatch({ ...event, event_id: 'evt_next' })).rejects.toBeInstanceOf(ClosingError)
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(shutdown).not.toHaveBeenCalled()
    release.open()
    expect(await dispatching).toEqual({ status: 'processed' })
    await closing
    expect(shutdown).toHaveBeenCalledOnce()
  })

  it('reports a failing store shutdown as StoreError and still resolves', async () => {
    const errors: WebhookError[] = []
    const store: WebhookStore = {
      ...memoryStore(),
      shutdown: async () => {
        throw new Error('quit failed')
      },
    }
    const webhooks = createWebhooks({ secret, store }).onError((error) => errors.push(error))
    await expect(webhooks.close()).resolves.toBeUndefined()
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(StoreError)
    expect(errors[0]?.message).toBe('store shutdown failed: quit failed')
  })

  it('refuses a negative or non-finite timeoutMs without closing', async () => {
    const { webhooks, shutdown } = setup()
    await expect(webhooks.close({ timeoutMs: -1 })).rejects.toThrow(new RangeError('close: timeoutMs must be >= 0'))
    await expect(webhooks.close({ timeoutMs: Number.POSITIVE_INFINITY })).rejects.toThrow(RangeError)
    expect((await deliver(webhooks, 'evt_open')).status).toBe(200)
    expect(shutdown).not.toHaveBeenCalled()
  })
})
