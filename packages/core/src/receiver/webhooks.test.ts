import { sampleEvent, samples, signedDelivery, signedRequest } from '@payhooks/testing'
import * as v from 'valibot'
import { describe, expect, it, vi } from 'vitest'
import {
  DeadlineError,
  HandlerError,
  InternalError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  SchemaError,
  SignatureError,
  StoreError,
  type WebhookError,
} from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import type { WebhookStore } from '../store.js'
import type { VerifiedEvent, WebhookResult } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import { createWebhooks } from './create.js'

const secret = 'whsec_core_test'

function setup(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({ secret, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors }
}

async function deliver(
  webhooks: { receive: (d: { body: string; getHeader: (n: string) => string | undefined }) => Promise<WebhookResult> },
  event: unknown,
  options: { signWith?: string; body?: string; header?: string | null } = {},
) {
  const signed = await signedDelivery(event, options.signWith ?? secret)
  const body = options.body ?? signed.body
  const header = options.header === undefined ? signed.headers['service-hmac-sha256'] : options.header
  const result = await webhooks.receive({
    body,
    getHeader: (name) => (name === 'service-hmac-sha256' && header !== null ? header : undefined),
  })
  return { ...result, json: JSON.parse(result.body) as Record<string, unknown> }
}

const deferred = () => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

describe('createWebhooks: a valid event', () => {
  it('runs the typed handler and onAny with the parsed event, then answers 200', async () => {
    const { webhooks, errors } = setup()
    const seen: unknown[] = []
    webhooks.on('transaction_settled', (event) => {
      seen.push(['settled', event.event_id, event.data.settlement_amount, event.data.transaction_fees_amount])
    })
    webhooks.onAny((event) => {
      seen.push(['any', event.event_type])
    })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_a' })
    const result = await deliver(webhooks, event)
    expect(result.status).toBe(200)
    expect(result.json).toEqual({ ok: true, event_id: 'evt_a', status: 'processed' })
    expect(seen).toEqual([
      ['settled', 'evt_a', samples.transaction_settled.data.settlement_amount, 0.45],
      ['any', 'transaction_settled'],
    ])
    expect(errors).toEqual([])
  })

  it('keeps the built-in schema of a type the schemas option sets to undefined (a conditional branch)', async () => {
    const webhooks = createWebhooks({ secret, schemas: { transaction_settled: undefined } })
    const errors: WebhookError[] = []
    webhooks.onError((error) => errors.push(error))
    let ran = 0
    webhooks.on('transaction_settled', () => void ran++)

    const bad = await deliver(webhooks, sampleEvent('transaction_settled', { data: { settlement_amount: 'a lot' } }))
    const good = await deliver(webhooks, sampleEvent('transaction_settled'))

    expect([bad.status, bad.json.error]).toEqual([422, 'schema_mismatch'])
    expect(errors.map((error) => error.code)).toEqual(['schema_mismatch'])
    expect([good.status, ran]).toEqual([200, 1])
  })

  it('accepts every sample event the spec shows, with its quirks', async () => {
    const { webhooks, errors } = setup()
    const received: Record<string, unknown> = {}
    webhooks.onAny((event) => {
      received[event.event_type] = event
    })
    for (const type of Object.keys(samples)) {
      expect((await deliver(webhooks, sampleEvent(type))).status).toBe(200)
    }
    expect(errors).toEqual([])
    const returned = received.transaction_returned as { created_at?: string; settlement_date?: string; data: object }
    expect(returned.created_at).toBeUndefined()
    // Its top-level settlement_date is its signed time (it has no created_at): now, as sampleEvent stamps it.
    expect(Date.now() - Date.parse(returned.settlement_date ?? '')).toBeLessThan(60_000)
    expect(returned.data).toMatchObject({ transaction_external_id: null, settlement_amount: -25 })
    expect(received.merchant_activated_for_payment_type).toMatchObject({ client_id: '1234' })
  })

  it('accepts an ACH activation without currency_code and with a null external_id', async () => {
    const { webhooks, errors } = setup()
    const data = { ...samples.merchant_activated_for_payment_type.data, payment_type: 'ach', external_id: null }
    const { currency_code: _, ...ach } = data
    const event = { ...sampleEvent('merchant_activated_for_payment_type'), data: ach }
    let seen: unknown
    webhooks.on('merchant_activated_for_payment_type', (e) => {
      seen = [e.data.currency_code, e.data.external_id]
    })
    expect((await deliver(webhooks, event)).status).toBe(200)
    expect(seen).toEqual([undefined, null])
    expect(errors).toEqual([])
  })

  it('passes fields the service adds through to handlers', async () => {
    const { webhooks } = setup()
    let seen: unknown
    webhooks.on('transaction_settled', (event) => {
      // Fields the schemas do not know are there at run time, untyped.
      const extra = event as typeof event & { new_envelope_field: unknown; data: { new_data_field: unknown } }
      seen = [extra.new_envelope_field, extra.data.new_data_field]
    })
    const event = sampleEvent('transaction_settled', { data: { new_data_field: 7 } })
    await deliver(webhooks, { ...event, new_envelope_field: 'x' })
    expect(seen).toEqual(['x', 7])
  })

  it('delivers types without a schema to on(type) and onAny with data untouched', async () => {
    const { webhooks } = setup()
    const seen: unknown[] = []
    webhooks.on('payment_created', (event) => {
      seen.push(event.data)
    })
    webhooks.on('brand_new_event', (event) => {
      seen.push(event.data)
    })
    await deliver(webhooks, { event_type: 'payment_created', event_id: 'p1', data: { amount: 3 } })
    await deliver(webhooks, { event_type: 'brand_new_event', event_id: 'b1', data: [1, 2] })
    expect(seen).toEqual([{ amount: 3 }, [1, 2]])
  })

  it('validates and types a schema the user registers', async () => {
    const schemas = {
      payment_created: v.looseObject({
        event_type: v.literal('payment_created'),
        event_id: v.string(),
        data: v.looseObject({ payment_id: v.string(), amount: v.number() }),
      }),
    }
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret, schemas }).onError((e) => errors.push(e))
    const amounts: number[] = []
    webhooks.on('payment_created', (event) => {
      amounts.push(event.data.amount)
    })
    const good = { event_type: 'payment_created', event_id: 'p1', data: { payment_id: 'pay_1', amount: 12 } }
    expect((await deliver(webhooks, good)).status).toBe(200)
    const bad = { event_type: 'payment_created', event_id: 'p2', data: { payment_id: 'pay_2' } }
    expect((await deliver(webhooks, bad)).status).toBe(422)
    expect(amounts).toEqual([12])
    expect(errors[0]).toBeInstanceOf(SchemaError)
  })

  it('works through handle(Request), header name in any case', async () => {
    const { webhooks } = setup()
    const handler = vi.fn()
    webhooks.on('transaction_settled', handler)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
    const response = await webhooks.handle(
      new Request('http://localhost/webhooks', {
        method: 'POST',
        body,
        headers: { 'Content-Type': 'application/json', 'Service-HMAC-SHA256': headers['service-hmac-sha256'] },
      }),
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(handler).toHaveBeenCalledOnce()
  })

  it('gives every answer its own headers object, so a server that adds headers cannot leak them into the next', async () => {
    const { webhooks } = setup()
    const first = await deliver(webhooks, sampleEvent('transaction_settled'), { header: null })
    first.headers['content-length'] = '75'
    const second = await deliver(webhooks, sampleEvent('transaction_settled'), { header: null })
    // Unsigned: refused before any body is read, so its connection is closed.
    expect(second.headers).toEqual({ 'content-type': 'application/json', connection: 'close' })
    const ok = await deliver(webhooks, sampleEvent('transaction_settled'))
    ok.headers['content-length'] = '1'
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).headers).toEqual({
      'content-type': 'application/json',
    })
  })

  it('tries every secret of a list, and secrets from an async resolver', async () => {
    const rotating = setup({ secret: ['whsec_old', 'whsec_new'] })
    expect(
      (await deliver(rotating.webhooks, sampleEvent('transaction_settled'), { signWith: 'whsec_new' })).status,
    ).toBe(200)
    const resolver = vi.fn(async ({ getHeader }: { getHeader: (n: string) => string | null | undefined }) =>
      getHeader('service-hmac-sha256') ? ['whsec_a', 'whsec_b'] : [],
    )
    const resolved = setup({ secret: resolver })
    expect((await deliver(resolved.webhooks, sampleEvent('transaction_settled'), { signWith: 'whsec_b' })).status).toBe(
      200,
    )
    expect(resolver).toHaveBeenCalledOnce()
  })

  it('answers 500 without running handlers when the secret resolver throws', async () => {
    const { webhooks, errors } = setup({
      secret: async () => {
        throw new Error('vault down')
      },
    })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const result = await deliver(webhooks, sampleEvent('transaction_settled'))
    expect(result.status).toBe(500)
    expect(errors[0]).toBeInstanceOf(InternalError)
    expect(handler).not.toHaveBeenCalled()
  })
})

describe('createWebhooks: bad input runs no handler', () => {
  const cases: [string, (event: Record<string, unknown>) => Parameters<typeof deliver>[2], number, string, unknown][] =
    [
      ['missing signature', () => ({ header: null }), 401, 'missing_signature', SignatureError],
      ['empty signature', () => ({ header: '' }), 401, 'missing_signature', SignatureError],
      ['signature not 64 hex characters', () => ({ header: 'ABC' }), 401, 'invalid_signature', SignatureError],
      [
        'signature with a bad character',
        () => ({ header: `${'A'.repeat(63)}G` }),
        401,
        'invalid_signature',
        SignatureError,
      ],
      ['signature from another secret', () => ({ signWith: 'whsec_other' }), 401, 'invalid_signature', SignatureError],
    ]
  it.each(cases)('%s: %i', async (_name, options, status, code, errorClass) => {
    const { webhooks, errors } = setup()
    const handler = vi.fn()
    webhooks.onAny(handler)
    const event = sampleEvent('transaction_settled')
    const result = await deliver(webhooks, event, options(event))
    expect(result.status).toBe(status)
    expect(result.json).toEqual({ error: code, message: expect.any(String) })
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(errorClass)
    expect(handler).not.toHaveBeenCalled()
  })

  it('rejects a body with one added space (tampered), 401', async () => {
    const { webhooks, errors } = setup()
    const handler = vi.fn()
    webhooks.onAny(handler)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
    const tampered = body.replace('"settlement_amount":', '"settlement_amount": ')
    expect(tampered).not.toBe(body)
    const result = await deliver(webhooks, null, { body: tampered, header: headers['service-hmac-sha256'] })
    expect(result.status).toBe(401)
    expect(handler).not.toHaveBeenCalled()
    expect(errors[0]?.code).toBe('invalid_signature')
  })

  it.each([
    ['not JSON', '{"event_id": "x",', 'invalid_json'],
    ['JSON but not an object', '[1,2,3]', 'invalid_envelope'],
    ['missing event_id', '{"event_type":"transaction_settled","data":{}}', 'invalid_envelope'],
    ['empty event_id', '{"event_type":"transaction_settled","event_id":"","data":{}}', 'invalid_envelope'],
    ['missing event_type', '{"event_id":"e1","data":{}}', 'invalid_envelope'],
  ])('signed body %s: 400', async (_name, body, code) => {
    const { webhooks, errors } = setup()
    const handler = vi.fn()
    webhooks.onAny(handler)
    const result = await deliver(webhooks, body)
    expect(result.status).toBe(400)
    expect(result.json.error).toBe(code)
    expect(errors[0]).toBeInstanceOf(PayloadError)
    expect(handler).not.toHaveBeenCalled()
  })

  it('a signed event that does not match its schema: 422, onError with the event id and issues, retried later', async () => {
    const { webhooks, errors } = setup()
    const handler = vi.fn()
    webhooks.onAny(handler)
    const event = sampleEvent('transaction_settled', { eventId: 'evt_bad', data: { settlement_amount: '10.30' } })
    const result = await deliver(webhooks, event)
    expect(result.status).toBe(422)
    expect(handler).not.toHaveBeenCalled()
    const error = errors[0] as SchemaError
    expect(error).toBeInstanceOf(SchemaError)
    expect(error.eventId).toBe('evt_bad')
    expect(error.issues.map((i) => i.path)).toEqual(['data.settlement_amount'])
    // Not recorded as handled: once the schema accepts it, the retry runs the handlers.
    const fixed = createWebhooks({ secret, store: memoryStore() })
    const fixedHandler = vi.fn()
    fixed.onAny(fixedHandler)
    expect(
      (await deliver(fixed, { ...event, data: { ...(event.data as object), settlement_amount: 10.3 } })).status,
    ).toBe(200)
    expect(fixedHandler).toHaveBeenCalledOnce()
  })

  it('a body over maxBodyBytes: 413 from receive and from handle, unread when content-length says so', async () => {
    const { webhooks, errors } = setup({ maxBodyBytes: 100 })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const event = sampleEvent('transaction_settled')
    expect((await deliver(webhooks, event)).status).toBe(413)
    const request = await signedRequest(event, secret)
    expect((await webhooks.handle(request)).status).toBe(413)
    // A streamed body without content-length is cut off at the limit.
    let pulled = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(new Uint8Array(64).fill(0x20))
        if (pulled > 1000) controller.close()
      },
    })
    const streamed = new Request('http://localhost/', {
      method: 'POST',
      body: stream,
      headers: { 'service-hmac-sha256': 'A'.repeat(64) },
      duplex: 'half',
    } as RequestInit)
    expect((await webhooks.handle(streamed)).status).toBe(413)
    expect(pulled).toBeLessThan(10)
    expect(errors.every((e) => e instanceof PayloadTooLargeError)).toBe(true)
    expect(handler).not.toHaveBeenCalled()
  })

  it('anything but POST: 405 with Allow', async () => {
    const { webhooks, errors } = setup()
    const response = await webhooks.handle(new Request('http://localhost/webhooks', { method: 'GET' }))
    expect(response.status).toBe(405)
    expect(response.headers.get('allow')).toBe('POST')
    expect(errors[0]).toBeInstanceOf(MethodNotAllowedError)
  })

  it('never puts the secret, or a stack trace, in an answer or a report', async () => {
    const logged: string[] = []
    const webhooks = createWebhooks({ secret, logger: { error: (m) => logged.push(m) } })
    webhooks.onAny(() => {
      throw new Error(`boom\n    at secretFunction (/app/${secret}.js:1:1)`)
    })
    const answers = [
      await deliver(webhooks, sampleEvent('transaction_settled'), { signWith: 'whsec_other' }),
      await deliver(webhooks, sampleEvent('transaction_settled')),
    ]
    for (const text of [...answers.map((a) => a.body), ...logged]) {
      expect(text).not.toContain(secret)
      expect(text).not.toMatch(/\n|\bat \S+ \(/)
    }
    expect(logged).toHaveLength(2)
    expect(logged[0]).toMatch(/^\[payhooks\] 401 invalid_signature: /)
  })
})

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
    await vi.waitFor(() => expect(errors.some((e) => e instanceof HandlerError)).toBe(true))
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

describe('createWebhooks: options and queue mode', () => {
  it('rejects a deadline of 10 s or more, and bad secrets', () => {
    expect(() => createWebhooks({ secret, deadlineMs: 10_000 })).toThrow(RangeError)
    expect(() => createWebhooks({ secret, deadlineMs: 0 })).toThrow(RangeError)
    expect(() => createWebhooks({ secret: '' })).toThrow(TypeError)
    expect(() => createWebhooks({ secret: [] })).toThrow(TypeError)
  })

  it('logs a failure once, in one line, when no onError is registered', async () => {
    const logged: string[] = []
    const webhooks = createWebhooks({ secret, logger: { error: (m) => logged.push(m) } })
    await deliver(webhooks, sampleEvent('transaction_settled'), { header: null })
    expect(logged).toEqual(['[payhooks] 401 missing_signature: missing service-hmac-sha256 header'])
  })

  it('hands verified events to the queue and answers 200 queued; 503 when enqueueing fails', async () => {
    const queued: VerifiedEvent[] = []
    let fail = false
    const queue = {
      enqueue: async (event: VerifiedEvent) => {
        if (fail) throw new Error('redis down')
        queued.push(event)
      },
    }
    const { webhooks, errors } = setup({ queue })
    const handler = vi.fn()
    webhooks.onAny(handler)
    const event = sampleEvent('transaction_settled', { eventId: 'evt_q' })
    const result = await deliver(webhooks, event)
    expect(result.json).toEqual({ ok: true, event_id: 'evt_q', status: 'queued' })
    expect(queued.map((e) => e.event_id)).toEqual(['evt_q'])
    expect(handler).not.toHaveBeenCalled()
    fail = true
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    expect(errors[0]).toBeInstanceOf(StoreError)
    // The worker side: dispatch runs handlers once per event.
    expect(await webhooks.dispatch(queued[0] as VerifiedEvent)).toEqual({ status: 'processed' })
    expect(await webhooks.dispatch(queued[0] as VerifiedEvent)).toEqual({ status: 'duplicate' })
    expect(handler).toHaveBeenCalledOnce()
  })
})
