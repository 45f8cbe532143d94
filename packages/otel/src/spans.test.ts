// openTelemetry() on the real SDK, spans of an inline delivery through InMemorySpanExporter.
import { SpanStatusCode, trace } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node'
import { PayloadTooLargeError, type WebhookStore } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION } from './index.js'
import { deliver, globalSdk, receiver, secret } from './test-helpers.js'

const { spans, named, only, childrenOf, points, count } = globalSdk()

describe('openTelemetry(): spans of an inline delivery', () => {
  it('makes one payhooks.receive span with children for store calls and each handler', async () => {
    const webhooks = receiver()
    const tracer = trace.getTracer('app')
    webhooks.on('transaction_settled', async function credit() {
      // A span the handler makes nests under the handler's span (its context is active).
      await tracer.startActiveSpan('ledger.credit', async (span) => span.end())
    })
    webhooks.onAny(() => {})
    const result = await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_otel_1' }))
    expect(result.status).toBe(200)

    const receive = only('payhooks.receive')
    expect(receive.instrumentationScope).toMatchObject({ name: INSTRUMENTATION_NAME, version: INSTRUMENTATION_VERSION })
    expect(receive.attributes).toMatchObject({
      'payhooks.event.id': 'evt_otel_1',
      'payhooks.event.type': 'transaction_settled',
      'payhooks.outcome': 'processed',
      'http.response.status_code': 200,
      'payhooks.duplicate': false,
    })
    expect(receive.attributes['payhooks.store.claim.duration_ms']).toBeTypeOf('number')
    expect(receive.attributes['payhooks.store.complete.duration_ms']).toBeTypeOf('number')
    expect(receive.status.code).toBe(SpanStatusCode.UNSET)
    expect(childrenOf(receive).map((span) => span.name)).toEqual(
      expect.arrayContaining([
        'payhooks.store.claim',
        'payhooks.handler',
        'payhooks.handler',
        'payhooks.store.complete',
      ]),
    )
    expect(childrenOf(receive)).toHaveLength(4)
    const claim = only('payhooks.store.claim')
    expect(claim.attributes).toMatchObject({ 'payhooks.store.operation': 'claim', 'payhooks.event.id': 'evt_otel_1' })
    const handlers = named('payhooks.handler')
    const credit = handlers.find((span) => span.attributes['code.function.name'] === 'credit') as ReadableSpan
    expect(credit.attributes).toMatchObject({
      'payhooks.handler.kind': 'on',
      'payhooks.handler.index': 0,
      'payhooks.event.type': 'transaction_settled',
    })
    expect(handlers.find((span) => span !== credit)?.attributes['payhooks.handler.kind']).toBe('any')
    expect(only('ledger.credit').parentSpanContext?.spanId).toBe(credit.spanContext().spanId)
    expect(credit.spanContext().traceId).toBe(receive.spanContext().traceId)
  })

  it('nests payhooks.receive under the span active when receive() is called (the HTTP server span)', async () => {
    const webhooks = receiver()
    const tracer = trace.getTracer('http')
    await tracer.startActiveSpan('POST /webhooks', async (server) => {
      await deliver(webhooks, sampleEvent('transaction_settled'))
      server.end()
    })
    expect(only('payhooks.receive').parentSpanContext?.spanId).toBe(only('POST /webhooks').spanContext().spanId)
  })

  it('marks a duplicate, and counts it as a dedupe hit', async () => {
    const webhooks = receiver()
    const hitsBefore = await count('payhooks.dedupe.hits', { 'payhooks.event.type': 'transaction_settled' })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_otel_dup' })
    await deliver(webhooks, event)
    spans.reset()
    await deliver(webhooks, event)
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({ 'payhooks.outcome': 'duplicate', 'payhooks.duplicate': true })
    expect(childrenOf(receive).map((span) => span.name)).toEqual(['payhooks.store.claim'])
    expect(await count('payhooks.dedupe.hits', { 'payhooks.event.type': 'transaction_settled' })).toBe(hitsBefore + 1)
  })

  it('marks a copy with other bytes as a conflict: an event with both digests on the span, and counts it', async () => {
    const webhooks = receiver()
    const attributes = { 'payhooks.event.type': 'transaction_settled', 'payhooks.event.in_progress': false }
    const before = await count('payhooks.event.conflicts', attributes)
    const event = sampleEvent('transaction_settled', { eventId: 'evt_otel_conflict' })
    await deliver(webhooks, event)
    spans.reset()
    await deliver(webhooks, { ...event, merchant_id: 1 })
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({ 'payhooks.outcome': 'duplicate', 'payhooks.event.conflict': true })
    expect(receive.events.map((spanEvent) => spanEvent.name)).toEqual(['payhooks.event_conflict'])
    const digests = receive.events[0]?.attributes ?? {}
    expect(digests['payhooks.body_digest.received']).toMatch(/^[0-9a-f]{32}$/)
    expect(digests['payhooks.body_digest.handled']).toMatch(/^[0-9a-f]{32}$/)
    expect(digests['payhooks.body_digest.received']).not.toBe(digests['payhooks.body_digest.handled'])
    expect(await count('payhooks.event.conflicts', attributes)).toBe(before + 1)
  })

  it('records a failing handler on its span and the delivery as a 500 error', async () => {
    const webhooks = receiver()
    webhooks.on('transaction_returned', () => {
      throw new TypeError('ledger refused')
    })
    expect((await deliver(webhooks, sampleEvent('transaction_returned'))).status).toBe(500)
    const handler = only('payhooks.handler')
    expect(handler.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'ledger refused' })
    expect(handler.attributes['error.type']).toBe('TypeError')
    expect(handler.events.map((event) => event.name)).toContain('exception')
    const receive = only('payhooks.receive')
    expect(receive.status.code).toBe(SpanStatusCode.ERROR)
    expect(receive.attributes).toMatchObject({
      'payhooks.outcome': 'handler_failed',
      'http.response.status_code': 500,
      'error.type': 'handler_failed',
    })
    expect(childrenOf(receive).map((span) => span.name)).toEqual(
      expect.arrayContaining(['payhooks.store.claim', 'payhooks.handler', 'payhooks.store.release']),
    )
  })

  it('records a refused delivery with its status and no event', async () => {
    const webhooks = receiver()
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_other')).status).toBe(401)
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({
      'payhooks.outcome': 'invalid_signature',
      'http.response.status_code': 401,
    })
    expect(receive.attributes['payhooks.event.id']).toBeUndefined()
    expect(receive.status.code).toBe(SpanStatusCode.UNSET) // the sender's mistake, as 4XX are for HTTP servers
    expect(childrenOf(receive)).toEqual([])
  })

  it("puts the signature doctor's hint on a refused delivery's span", async () => {
    const webhooks = receiver()
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
    const sent = `${body}\n` // a trailing newline added on the way
    await webhooks.receive({ method: 'POST', body: sent, getHeader: (name) => headers[name as keyof typeof headers] })
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'invalid_signature',
      'payhooks.signature.hint': 'trailing_newline',
    })
  })

  it('says which secret verified a delivery: span attributes and the payhooks.secret.verified counter', async () => {
    const webhooks = receiver({ secret: [secret, { secret: 'whsec_otel_old', label: 'sub_old' }] })
    const old = { 'payhooks.secret.index': 1, 'payhooks.secret.label': 'sub_old' }
    const before = await count('payhooks.secret.verified', old)
    const firstBefore = await count('payhooks.secret.verified', { 'payhooks.secret.index': 0 })
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_otel_old')).status).toBe(200)
    expect(only('payhooks.receive').attributes).toMatchObject(old)
    spans.reset()
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    const first = only('payhooks.receive').attributes
    expect(first['payhooks.secret.index']).toBe(0)
    expect(first['payhooks.secret.label']).toBeUndefined()
    expect(await count('payhooks.secret.verified', old)).toBe(before + 1)
    expect(await count('payhooks.secret.verified', { 'payhooks.secret.index': 0 })).toBe(firstBefore + 1)
  })

  it("records an adapter's rejection (webhooks.reject) as a delivery", async () => {
    const webhooks = receiver()
    const before = await count('payhooks.deliveries', { 'payhooks.outcome': 'payload_too_large' })
    expect(webhooks.reject(new PayloadTooLargeError(10)).status).toBe(413)
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'payload_too_large',
      'http.response.status_code': 413,
    })
    expect(await count('payhooks.deliveries', { 'payhooks.outcome': 'payload_too_large' })).toBe(before + 1)
  })

  it('ends the span with the deadline answer, while the handler span goes on until the handler ends', async () => {
    const webhooks = receiver({ deadlineMs: 50 })
    let release!: () => void
    const slow = new Promise<void>((resolve) => {
      release = resolve
    })
    webhooks.on('transaction_settled', () => slow)
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({
      'payhooks.outcome': 'deadline_exceeded',
      'http.response.status_code': 503,
      'error.type': 'deadline_exceeded',
    })
    expect(receive.status.code).toBe(SpanStatusCode.ERROR)
    expect(named('payhooks.handler')).toEqual([])
    release()
    await webhooks.close()
    expect(only('payhooks.handler').parentSpanContext?.spanId).toBe(receive.spanContext().spanId)
    expect(only('payhooks.store.complete').parentSpanContext?.spanId).toBe(receive.spanContext().spanId)
    expect(named('payhooks.receive')).toHaveLength(1)
  })

  it('records a failing store call, and counts it as a store error by operation', async () => {
    const store: WebhookStore = {
      claim: () => Promise.reject(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' })),
      extend: () => true,
      complete: () => true,
      release: () => true,
    }
    const webhooks = receiver({ store })
    const before = await count('payhooks.store.errors', { 'payhooks.store.operation': 'claim' })
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    const claim = only('payhooks.store.claim')
    expect(claim.status.code).toBe(SpanStatusCode.ERROR)
    expect(claim.attributes['error.type']).toBe('ECONNREFUSED')
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'store_unavailable',
      'http.response.status_code': 503,
    })
    expect(await count('payhooks.store.errors', { 'payhooks.store.operation': 'claim' })).toBe(before + 1)
    const failed = (await points('payhooks.store.duration')).filter(
      (point) => point.attributes['payhooks.store.operation'] === 'claim' && point.attributes['error.type'],
    )
    expect(failed.map((point) => point.attributes['error.type'])).toEqual(['ECONNREFUSED'])
  })
})
