// The receiver under hostile input and faults, without a transport: bodies that never finish arriving, thrown
// errors that carry secrets, replays of old events, events from the future, and decoded text that lost its BOM.
import { sampleEvent, signedDelivery, signedRequest } from '@payhooks/testing'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import {
  BodyTimeoutError,
  ClosingError,
  DeadlineError,
  FutureEventError,
  HandlerError,
  IncompleteBodyError,
  InternalError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  SchemaError,
  SignatureError,
  StaleEventError,
  StoreError,
  type WebhookError,
  type WebhookErrorCode,
} from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'
import { sign } from '../verify/signature.js'
import { decodedTextBody } from '../web.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import { errorAnswer } from './answers.js'

const secret = 'whsec_hostile_test'
const HOUR = 60 * 60 * 1000

function setup(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const runs: string[] = []
  const webhooks = createWebhooks({ secret, ...options })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => void runs.push(event.event_id))
  return { webhooks, errors, runs }
}

async function signed(event: unknown) {
  const { body, headers } = await signedDelivery(event, secret)
  return { body, getHeader: (name: string) => (headers as Record<string, string>)[name] }
}

const aged = (ageMs: number, type = 'transaction_settled') =>
  sampleEvent(type, { createdAt: new Date(Date.now() - ageMs).toISOString() })

describe('a body still arriving', () => {
  it('is answered 408 body_timeout at the deadline, the read stopped and no handler run, even if it arrives later', async () => {
    const { webhooks, errors, runs } = setup({ deadlineMs: 50 })
    const delivery = await signed(sampleEvent('transaction_settled'))
    let arrive!: (body: string) => void
    const body = new Promise<string>((resolve) => {
      arrive = resolve
    })
    const stopReading = vi.fn()

    const answer = await webhooks.receive({ body, getHeader: delivery.getHeader, stopReading })
    arrive(delivery.body)
    await new Promise((resolve) => setTimeout(resolve, 20))

    expect(answer.status).toBe(408)
    expect(answer.headers.connection).toBe('close')
    expect(JSON.parse(answer.body)).toEqual({
      error: 'body_timeout',
      message: 'request body not received within the deadline',
    })
    expect(stopReading).toHaveBeenCalledOnce()
    expect(errors).toEqual([expect.any(BodyTimeoutError)])
    expect(runs).toEqual([])
  })

  it('does not keep close() waiting when its read never settles', async () => {
    const { webhooks } = setup({ deadlineMs: 50 })
    const delivery = await signed(sampleEvent('transaction_settled'))
    const answer = await webhooks.receive({ body: new Promise<string>(() => {}), getHeader: delivery.getHeader })
    expect(answer.status).toBe(408)
    // Resolves although the read is still pending; with the delivery still counted it would wait the full minute.
    await webhooks.close({ timeoutMs: 60_000 })
  })

  it('counts from the call, not from the body: a slow body and slow handlers share one deadline', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 200 })
    webhooks.on('transaction_settled', () => new Promise((resolve) => setTimeout(resolve, 150)))
    const delivery = await signed(sampleEvent('transaction_settled'))
    const body = new Promise<string>((resolve) => setTimeout(() => resolve(delivery.body), 120))

    const answer = await webhooks.receive({ body, getHeader: delivery.getHeader })

    expect(answer.status).toBe(503)
    expect(errors[0]).toBeInstanceOf(DeadlineError)
  })

  it('is answered with the error its promise rejects with, such as 413 with connection: close', async () => {
    const { webhooks, runs } = setup()
    const delivery = await signed(sampleEvent('transaction_settled'))
    const answer = await webhooks.receive({
      body: Promise.reject(new PayloadTooLargeError(10)),
      getHeader: delivery.getHeader,
    })
    expect(answer.status).toBe(413)
    expect(answer.headers.connection).toBe('close')
    expect(runs).toEqual([])
  })

  it('is stopped, its rejection ignored, once the receiver is closing', async () => {
    const { webhooks, errors } = setup()
    await webhooks.close()
    const stopReading = vi.fn()
    let fail!: (error: Error) => void
    const body = new Promise<string>((_, reject) => {
      fail = reject
    })
    const answer = await webhooks.receive({ body, getHeader: () => undefined, stopReading })
    fail(new IncompleteBodyError(new Error('connection reset')))
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(answer.status).toBe(503)
    expect(answer.headers.connection).toBe('close')
    expect(stopReading).toHaveBeenCalledOnce()
    expect(errors).toEqual([expect.any(ClosingError)])
  })

  it('through handle(): a request stream that never ends is answered 408 and cancelled', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 50 })
    const cancel = vi.fn()
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"event_type":'))
      },
      cancel,
    })
    const request = new Request('http://localhost/webhooks', {
      method: 'POST',
      body: stream,
      headers: { 'service-hmac-sha256': 'A'.repeat(64) },
      duplex: 'half',
    } as RequestInit)

    const response = await webhooks.handle(request)

    expect(response.status).toBe(408)
    expect(response.headers.get('connection')).toBe('close')
    expect(cancel).toHaveBeenCalledOnce()
    expect(errors.map((e) => e.code)).toEqual(['body_timeout'])
  })
})

describe('thrown errors', () => {
  const leak = 'postgres://ledger:hunter2@db.internal/ledger refused'
  const failingStore = (): WebhookStore => ({
    ...memoryStore(),
    claim() {
      throw new Error(leak)
    },
  })
  const sources: [string, Partial<WebhooksOptions>, boolean, number, WebhookErrorCode][] = [
    [
      'a secret resolver',
      {
        secret: () => {
          throw new Error(leak)
        },
      },
      false,
      500,
      'internal_error',
    ],
    ['a handler', {}, true, 500, 'handler_failed'],
    ['the store', { store: failingStore() }, false, 503, 'store_unavailable'],
  ]

  it.each(sources)(
    'from %s never reach the answer of handle(), only onError',
    async (_name, options, throwing, status, code) => {
      const { webhooks, errors } = setup(options)
      if (throwing) {
        webhooks.on('transaction_settled', () => {
          throw new Error(leak, { cause: new Error('socket hang up') })
        })
      }

      const response = await webhooks.handle(await signedRequest(sampleEvent('transaction_settled'), secret))
      const text = await response.text()

      expect(response.status).toBe(status)
      expect(JSON.parse(text).error).toBe(code)
      expect(text).not.toContain('hunter2')
      expect(errors).toHaveLength(1)
      expect(errors[0]?.message).toContain(leak)
      const thrown = errors[0]?.cause as Error
      expect(thrown.message).toBe(leak)
      if (throwing) expect((thrown.cause as Error).message).toBe('socket hang up')
    },
  )

  it('answer every code with its fixed sentence, whatever the error message says', () => {
    const secretText = 'password=hunter2'
    const cause = new Error(secretText)
    const event = { event_id: 'evt_1', event_type: 'transaction_settled' }
    const all: WebhookError[] = [
      new MethodNotAllowedError(secretText),
      new PayloadTooLargeError(1024),
      new SignatureError('missing_signature', secretText),
      new SignatureError('invalid_signature', secretText),
      new PayloadError('invalid_json', secretText),
      new PayloadError('invalid_envelope', secretText),
      new SchemaError('evt_1', 'transaction_settled', [{ path: 'data', message: secretText }]),
      new HandlerError('evt_1', 'transaction_settled', [cause]),
      new DeadlineError(5000, 'evt_1', secretText),
      new StoreError('claim', cause, 'evt_1'),
      new ClosingError(),
      new InternalError(cause, event),
      new BodyTimeoutError(5000),
      new IncompleteBodyError(cause),
      new FutureEventError('evt_1', 'transaction_settled', secretText, HOUR),
      new StaleEventError('evt_1', 'transaction_settled', secretText, 80 * HOUR, event),
    ]
    const seen = new Set<string>()
    for (const error of all) {
      const answer = errorAnswer(error)
      const body = JSON.parse(answer.body) as { error: string; message: string }
      expect(answer.status).toBe(error.status)
      expect(body.error).toBe(error.code)
      expect(answer.body).not.toContain('hunter2')
      seen.add(body.error)
    }
    expect(seen.size).toBe(all.length) // every code but raw_body_unavailable
    const fix = errorAnswer(new RawBodyUnavailableError('the body was parsed first. Mount the route earlier.'))
    expect(JSON.parse(fix.body).message).toBe('the body was parsed first. Mount the route earlier.')
  })
})

describe('the age of a signed event', () => {
  it('answers an event older than maxEventAgeMs and not handled before 422 stale_event, runs nothing, and reports it', async () => {
    const { webhooks, errors, runs } = setup()
    const old = aged(84 * HOUR)

    const answer = await webhooks.receive(await signed(old))

    expect(answer.status).toBe(422)
    expect(JSON.parse(answer.body)).toEqual({
      error: 'stale_event',
      message: 'event older than this receiver accepts and not handled before; not acknowledged',
    })
    expect(runs).toEqual([])
    expect(errors).toHaveLength(1)
    const error = errors[0] as StaleEventError
    expect(error).toBeInstanceOf(StaleEventError)
    expect(error.createdAt).toBe(old.created_at)
    expect(error.ageMs).toBeGreaterThan(83 * HOUR)
    expect(error.event).toEqual(old)
  })

  it('runs events within the age limit, and events with no created_at at all (transaction_returned)', async () => {
    const { webhooks, errors, runs } = setup()
    const recent = aged(72 * HOUR)
    const returned = sampleEvent('transaction_returned')
    expect(returned).not.toHaveProperty('created_at')

    expect((await webhooks.receive(await signed(recent))).status).toBe(200)
    expect((await webhooks.receive(await signed(returned))).status).toBe(200)
    expect(runs).toEqual([recent.event_id, returned.event_id])
    expect(errors).toEqual([])
  })

  it('reads a created_at without a zone as UTC, and leaves one it cannot read to the schema', async () => {
    const { webhooks, errors, runs } = setup()
    const noZone = aged(84 * HOUR)
    noZone.created_at = String(noZone.created_at).replace('Z', '')
    const unreadable = sampleEvent('my_event')
    unreadable.created_at = 'last Tuesday'

    expect(JSON.parse((await webhooks.receive(await signed(noZone))).body).error).toBe('stale_event')
    expect((await webhooks.receive(await signed(unreadable))).status).toBe(200)
    expect(errors.map((e) => e.code)).toEqual(['stale_event'])
    expect(runs).toEqual([unreadable.event_id])
  })

  it.each([
    ['Asia/Tokyo', 66 * HOUR],
    ['Pacific/Honolulu', 60_000],
  ])('runs an event with a space-separated created_at without a zone under TZ=%s (%d ms old)', async (zone, ageMs) => {
    vi.stubEnv('TZ', zone)
    onTestFinished(() => {
      vi.unstubAllEnvs()
    })
    const { webhooks, errors, runs } = setup()
    const event = aged(ageMs)
    event.created_at = String(event.created_at).replace('T', ' ').replace('Z', '')

    const answer = await webhooks.receive(await signed(event))

    expect(JSON.parse(answer.body)).toEqual({ ok: true, event_id: event.event_id, status: 'processed' })
    expect(errors).toEqual([])
    expect(runs).toEqual([event.event_id])
  })

  it('answers an event further in the future than maxClockSkewMs 503 future_event, and runs it once it is not', async () => {
    const { webhooks, errors, runs } = setup({ maxClockSkewMs: 10 * 60_000 })
    const ahead = aged(-HOUR)
    const slightly = aged(-5 * 60_000)

    const answer = await webhooks.receive(await signed(ahead))

    expect(answer.status).toBe(503)
    expect(answer.headers['retry-after']).toBeDefined()
    expect(JSON.parse(answer.body).error).toBe('future_event')
    expect(errors[0]).toBeInstanceOf(FutureEventError)
    expect((await webhooks.receive(await signed(slightly))).status).toBe(200)
    expect(runs).toEqual([slightly.event_id])
  })

  it('turns either check off with Infinity, and refuses an age limit shorter than the 72 hours of retries', async () => {
    const { webhooks, runs } = setup({ maxEventAgeMs: Infinity, maxClockSkewMs: Infinity })
    const old = aged(1000 * HOUR)
    const future = aged(-1000 * HOUR)
    expect((await webhooks.receive(await signed(old))).status).toBe(200)
    expect((await webhooks.receive(await signed(future))).status).toBe(200)
    expect(runs).toEqual([old.event_id, future.event_id])

    expect(() => createWebhooks({ secret, maxEventAgeMs: 24 * HOUR })).toThrow(
      new RangeError('createWebhooks: maxEventAgeMs must be at least 259200000 (the service retries for 72 hours)'),
    )
    expect(() => createWebhooks({ secret, maxClockSkewMs: -1 })).toThrow(RangeError)
  })

  it('checks the age only after the signature: an unsigned old event is 401, not 200', async () => {
    const { webhooks, errors } = setup()
    const old = await signed(aged(84 * HOUR))
    const answer = await webhooks.receive({ body: old.body, getHeader: () => 'B'.repeat(64) })
    expect(answer.status).toBe(401)
    expect(errors.map((e) => e.code)).toEqual(['invalid_signature'])
  })
})

describe('decoded text', () => {
  const text = '{"event_type":"x","event_id":"evt_ë"}'
  const bytes = new TextEncoder().encode(text)

  it('gets back the BOM a UTF-8 decoder dropped when content-length counts it', async () => {
    const restored = decodedTextBody(text, String(bytes.byteLength + 3))
    expect(restored).toEqual(new Uint8Array([0xef, 0xbb, 0xbf, ...bytes]))
    expect(decodedTextBody(text, String(bytes.byteLength))).toBe(text)
    expect(decodedTextBody(text, null)).toBe(text)
    expect(decodedTextBody(`\uFEFF${text}`, String(bytes.byteLength + 3))).toBe(`\uFEFF${text}`)
  })

  it('parses a string body that still starts with a BOM, verified over its bytes', async () => {
    const { webhooks, errors, runs } = setup()
    const body = `\uFEFF${JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bom' }))}`
    const signature = await sign(secret, body)
    const answer = await webhooks.receive({ body, getHeader: () => signature })
    expect(errors).toEqual([])
    expect(answer.status).toBe(200)
    expect(runs).toEqual(['evt_bom'])
  })
})
