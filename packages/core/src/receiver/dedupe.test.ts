import { sampleEvent } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { DeadlineError, HandlerError, StoreError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import type { WebhookStore } from '../store.js'
import { deferred, deliver, setup } from '../test-helpers/webhooks.js'

describe('createWebhooks: dedupe and acknowledgement', () => {
  it('runs a duplicate delivery once and answers it 200', async () => {
    const { webhooks } = setup()
    const handler = vi.fn()
    webhooks.on('transaction_settled', handler)
    const event = sampleEvent('transaction_settled')
    expect((await deliver(webhooks, event)).json.status).toBe('processed')
    const again = await deliver(webhooks, event)
    expect(again.status).toBe(200)
    expect(again.json.status).toBe('duplicate')
    expect(handler).toHaveBeenCalledOnce()
  })

  it('answers a concurrent duplicate 409 with Retry-After while the first is still running, never 2XX', async () => {
    const { webhooks } = setup()
    const gate = deferred()
    let runs = 0
    webhooks.on('transaction_settled', async () => {
      runs++
      await gate.promise
    })
    const event = sampleEvent('transaction_settled')
    const first = deliver(webhooks, event)
    const second = await deliver(webhooks, event)
    expect(second.status).toBe(409)
    expect(Number(second.headers['retry-after'])).toBeGreaterThan(0)
    gate.resolve()
    expect((await first).status).toBe(200)
    expect(runs).toBe(1)
  })

  it('answers a handler failure 500, releases the claim, and runs the handler again on redelivery', async () => {
    const { webhooks, errors } = setup()
    let calls = 0
    webhooks.on('transaction_settled', () => {
      calls++
      if (calls === 1) throw new Error('ledger unavailable')
    })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_retry' })
    const first = await deliver(webhooks, event)
    expect(first.status).toBe(500)
    expect(first.json.error).toBe('handler_failed')
    expect(errors[0]).toBeInstanceOf(HandlerError)
    expect(errors[0]?.eventId).toBe('evt_retry')
    expect(errors[0]?.message).toContain('ledger unavailable')
    expect((await deliver(webhooks, event)).status).toBe(200)
    expect((await deliver(webhooks, event)).json.status).toBe('duplicate')
    expect(calls).toBe(2)
  })

  it('fails the event when any of several handlers fails, after running all of them', async () => {
    const { webhooks, errors } = setup()
    const ok = vi.fn()
    webhooks.on('transaction_settled', ok)
    webhooks.onAny(async () => {
      throw new Error('second handler')
    })
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(500)
    expect(ok).toHaveBeenCalledOnce()
    expect((errors[0] as HandlerError).errors).toHaveLength(1)
  })

  it('keeps every handler failure, in handler order, whether thrown at once or rejected later', async () => {
    for (const lateFirst of [false, true]) {
      const { webhooks, errors } = setup()
      const order: string[] = []
      webhooks.on('transaction_settled', async () => {
        order.push('async')
        throw new Error('async one')
      })
      webhooks.onAny(() => {
        order.push('sync')
        throw new Error('sync one')
      })
      if (lateFirst) webhooks.onAny(() => order.push('ok'))
      const event = sampleEvent('transaction_settled', { eventId: `evt_mixed_${lateFirst}` })
      expect((await deliver(webhooks, event)).status).toBe(500)
      expect(order).toEqual(lateFirst ? ['async', 'sync', 'ok'] : ['async', 'sync'])
      const reported = (errors[0] as HandlerError).errors.map((e) => (e as Error).message)
      expect(reported).toEqual(['async one', 'sync one'])
      // The claim was released: the retry runs the handlers again.
      order.length = 0
      expect((await deliver(webhooks, event)).status).toBe(500)
      expect(order).toContain('sync')
    }
  })

  it('answers handlers that all fail synchronously 500 at once, and releases the claim', async () => {
    const { webhooks, errors } = setup()
    let calls = 0
    webhooks.on('transaction_settled', () => {
      calls++
      throw new Error('first')
    })
    webhooks.onAny(() => {
      throw new Error('second')
    })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_sync_fail' })
    const answer = await deliver(webhooks, event)
    expect(answer.status).toBe(500)
    expect((errors[0] as HandlerError).errors.map((e) => (e as Error).message)).toEqual(['first', 'second'])
    await deliver(webhooks, event)
    expect(calls).toBe(2)
  })

  it('answers 503 when a synchronous store throws on claim, and 200 once it recovers', async () => {
    const inner = memoryStore()
    let broken = true
    const store: WebhookStore = {
      claim: (id, lease) => {
        if (broken) throw new Error('store down')
        return inner.claim(id, lease)
      },
      complete: (id, token) => inner.complete(id, token),
      release: (id, token) => inner.release(id, token),
    }
    const { webhooks, errors } = setup({ store })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const event = sampleEvent('transaction_settled')
    expect((await deliver(webhooks, event)).status).toBe(503)
    expect(errors[0]).toBeInstanceOf(StoreError)
    expect(handler).not.toHaveBeenCalled()
    broken = false
    expect((await deliver(webhooks, event)).status).toBe(200)
    expect(handler).toHaveBeenCalledOnce()
  })

  it('answers before the deadline when handlers overrun, then marks the event done when they succeed', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 100 })
    const gate = deferred()
    let runs = 0
    let finished = false
    webhooks.on('transaction_settled', async () => {
      runs++
      await gate.promise
      finished = true
    })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_slow' })
    const first = await deliver(webhooks, event)
    expect(finished).toBe(false)
    expect(first.status).toBe(503)
    expect(first.headers['retry-after']).toBeDefined()
    expect(errors[0]).toBeInstanceOf(DeadlineError)
    expect(errors[0]?.eventId).toBe('evt_slow')
    // While the handler still runs, a retry is not acknowledged.
    expect((await deliver(webhooks, event)).status).toBe(409)
    gate.resolve()
    await vi.waitFor(() => expect(finished).toBe(true))
    await new Promise((r) => setTimeout(r, 10))
    const retry = await deliver(webhooks, event)
    expect(retry.status).toBe(200)
    expect(retry.json.status).toBe('duplicate')
    expect(runs).toBe(1)
  })

  it('releases an overrunning event whose handlers then fail, so the retry runs them again', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 50 })
    let calls = 0
    webhooks.on('transaction_settled', async () => {
      calls++
      if (calls === 1) {
        await new Promise((r) => setTimeout(r, 150))
        throw new Error('late failure')
      }
    })
    const event = sampleEvent('transaction_settled')
    expect((await deliver(webhooks, event)).status).toBe(503)
    await vi.waitFor(() => expect(errors.some((e) => e instanceof HandlerError)).toBe(true), {
      timeout: 10_000,
      interval: 10,
    })
    expect((errors.find((e) => e instanceof HandlerError) as HandlerError).afterResponse).toBe(true)
    expect((await deliver(webhooks, event)).status).toBe(200)
    expect(calls).toBe(2)
  })

  it('answers at the deadline even when the store hangs', async () => {
    const hanging: WebhookStore = {
      claim: () => new Promise(() => {}),
      complete: () => true,
      release: () => true,
    }
    const { webhooks, errors } = setup({ deadlineMs: 50, store: hanging })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const result = await deliver(webhooks, sampleEvent('transaction_settled'))
    expect(result.status).toBe(503)
    expect(errors[0]).toBeInstanceOf(DeadlineError)
    expect(handler).not.toHaveBeenCalled()
  })

  it('answers 503 and runs no handler when the store fails to claim', async () => {
    const broken: WebhookStore = {
      claim: async () => {
        throw new Error('connection refused')
      },
      complete: () => true,
      release: () => true,
    }
    const { webhooks, errors } = setup({ store: broken })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const result = await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_s' }))
    expect(result.status).toBe(503)
    expect(result.json.error).toBe('store_unavailable')
    expect(errors[0]).toBeInstanceOf(StoreError)
    expect(errors[0]?.eventId).toBe('evt_s')
    expect(handler).not.toHaveBeenCalled()
  })

  it('acknowledges handled events even when the done marker cannot be written, and reports it', async () => {
    const inner = memoryStore()
    const store: WebhookStore = {
      claim: (id, lease) => inner.claim(id, lease),
      complete: () => {
        throw new Error('write failed')
      },
      release: (id, token) => inner.release(id, token),
    }
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    expect(errors[0]).toBeInstanceOf(StoreError)
  })

  it('retries a failed store init on the next delivery instead of failing forever', async () => {
    let attempts = 0
    const store = {
      ...memoryStore(),
      init: async () => {
        attempts++
        if (attempts === 1) throw new Error('redis not up yet')
      },
    }
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    expect(errors[0]).toBeInstanceOf(StoreError)
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    expect(attempts).toBe(2)
  })

  it('reports a claim lost before completion (handlers outlived the lease)', async () => {
    const inner = memoryStore()
    const store: WebhookStore = { ...inner, claim: (id, lease) => inner.claim(id, lease), complete: () => false }
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_lost' }))).status).toBe(200)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(StoreError)
    expect(errors[0]?.message).toContain('claim lost')
  })

  it('calls the store init once before the first claim', async () => {
    const init = vi.fn()
    const store = { ...memoryStore(), init }
    const { webhooks } = setup({ store })
    await deliver(webhooks, sampleEvent('transaction_settled'))
    await deliver(webhooks, sampleEvent('transaction_settled'))
    expect(init).toHaveBeenCalledOnce()
  })
})
