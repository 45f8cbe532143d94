import { sampleEvent, samples, signedDelivery } from '@payhooks/testing'
import * as v from 'valibot'
import { describe, expect, it, vi } from 'vitest'
import { InternalError, SchemaError, StoreError, type WebhookError } from '../errors/index.js'
import { deliver, secret, setup } from '../test-helpers/webhooks.js'
import type { VerifiedEvent } from '../types.js'
import { createWebhooks } from './create.js'

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
