import { sampleEvent, signedDelivery, signedRequest } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import {
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  SchemaError,
  SignatureError,
} from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { deliver, secret, setup } from '../test-helpers/webhooks.js'
import { createWebhooks } from './create.js'

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
