import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import type { HandlerContext } from '../types.js'
import { Claims, LazyAbortController } from './index.js'

const SECRET = 'whsec_context'

describe('LazyAbortController', () => {
  it('aborts a signal read before the abort, with the reason', () => {
    const controller = new LazyAbortController()
    const signal = controller.signal
    expect(signal.aborted).toBe(false)
    const reason = new Error('lease lost')
    controller.abort(reason)
    expect(signal.aborted).toBe(true)
    expect(signal.reason).toBe(reason)
    expect(controller.signal).toBe(signal)
  })

  it('gives a signal read only after the abort that is already aborted, with the first reason', () => {
    const controller = new LazyAbortController()
    const reason = new Error('closing')
    controller.abort(reason)
    controller.abort(new Error('second'))
    expect(controller.signal.aborted).toBe(true)
    expect(controller.signal.reason).toBe(reason)
  })
})

describe('the handler context', () => {
  it('is one class whose signal is a prototype getter: shared by every context, not copied by a spread', async () => {
    const contexts: HandlerContext[] = []
    const webhooks = createWebhooks({ secret: SECRET, logger: { error() {} } })
    webhooks.on('transaction_settled', (_event, context) => {
      contexts.push(context)
    })
    for (const id of ['evt_ctx_1', 'evt_ctx_2']) {
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: id }), SECRET)
      const answer = await webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
      expect(answer.status).toBe(200)
    }
    const [first, second] = contexts as [HandlerContext, HandlerContext]
    expect(Object.getPrototypeOf(first)).toBe(Object.getPrototypeOf(second))
    expect(Object.hasOwn(first, 'signal')).toBe(false)
    expect(first.signal).toBeInstanceOf(AbortSignal)
    expect(first.signal).not.toBe(second.signal)
    expect({ ...first }).toEqual({ verifiedWith: { index: 0 } })
  })
})

describe('Claims', () => {
  it('waits for tracked work and background work to end, and aborts the runs still holding a claim without letting them go', async () => {
    const claims = new Claims()
    let finish!: () => void
    const work = claims.track(() => new Promise<void>((resolve) => (finish = resolve)))
    const run = {
      eventId: 'evt_1',
      eventType: 't',
      token: 'k',
      digest: undefined,
      controller: new LazyAbortController(),
      due: 0,
      prev: undefined,
      next: undefined,
      linked: false,
    }
    claims.hold(run)
    let idle = false
    const waiting = claims.idle(60_000).then(() => (idle = true))
    await Promise.resolve()
    expect(idle).toBe(false)
    finish()
    await work
    await waiting
    expect(idle).toBe(true)
    // A done marker still retried: idle waits for it too, without a timeout when given none.
    const retried = claims.background()
    expect(claims.busy).toBe(true)
    let settled = false
    const behind = claims.idle().then(() => (settled = true))
    await Promise.resolve()
    expect(settled).toBe(false)
    retried()
    retried()
    await behind
    expect(claims.busy).toBe(false)
    const reason = new Error('closing')
    claims.stop(reason)
    expect(claims.stopped).toBe(true)
    expect(run.controller.signal.reason).toBe(reason)
    // Still held: a copy of its event is refused here until its handlers settle.
    expect(claims.runOf('evt_1')).toBe(run)
  })
})
