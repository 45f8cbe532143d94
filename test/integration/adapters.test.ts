// One scenario list for every adapter, so Express, Koa, Hono and Fastify cannot drift apart (Lambda runs the
// same list on events, in adapters-lambda.test.ts).
import { createWebhooks, type LogFields, type TransactionSettledEvent, WebhookError } from '@payhooks/core'
import { sampleEvent, sampleEventTypes, signedDelivery } from '@payhooks/testing'
import request from 'supertest'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { adapterApps, deferred, listen, SECRET, testWebhooks } from '../fixtures/apps.js'
import { postUnfinished } from '../fixtures/requests.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

describe.each(adapterApps)('$name adapter', ({ makeApp }) => {
  async function start(options: Parameters<typeof testWebhooks>[0] = {}) {
    const { webhooks, errors } = testWebhooks(options)
    const served = await listen(await makeApp(webhooks))
    closers.push(served.close)
    const post = (body: string, headers: Record<string, string>) =>
      request(served.server).post('/webhooks').set(headers).send(body)
    return { webhooks, errors, post, url: served.url, server: served.server }
  }

  it('hands a valid event, typed, to its handler and answers 200', async () => {
    const { webhooks, post } = await start()
    const seen: TransactionSettledEvent[] = []
    webhooks.on('transaction_settled', (event) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
      expectTypeOf(event.merchant_id).toEqualTypeOf<number>()
      seen.push(event)
    })
    const event = sampleEvent('transaction_settled', { data: { settlement_amount: -5 } })
    const { body, headers } = await signedDelivery(event, SECRET)

    const res = await post(body, headers)

    expect(res.status).toBe(200)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(res.body).toEqual({ ok: true, event_id: event.event_id, status: 'processed' })
    expect(seen).toEqual([event])
  })

  it('routes every sample event type to its own handler', async () => {
    const { webhooks, post } = await start()
    const seen: string[] = []
    for (const type of sampleEventTypes) webhooks.on(type, (event) => void seen.push(event.event_type))
    for (const type of sampleEventTypes) {
      const { body, headers } = await signedDelivery(sampleEvent(type), SECRET)
      expect((await post(body, headers)).status).toBe(200)
    }
    expect(seen).toEqual(sampleEventTypes)
  })

  it('answers a duplicate delivery 200 without running the handler again', async () => {
    const { webhooks, post } = await start()
    let runs = 0
    webhooks.on('transaction_settled', () => void runs++)
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, SECRET)

    expect((await post(body, headers)).body.status).toBe('processed')
    const again = await post(body, headers)

    expect(again.status).toBe(200)
    expect(again.body).toEqual({ ok: true, event_id: event.event_id, status: 'duplicate' })
    expect(runs).toBe(1)
  })

  it('answers 401 to a wrong or missing signature and runs nothing', async () => {
    const { webhooks, post, errors } = await start()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const signedElsewhere = await signedDelivery(sampleEvent('transaction_settled'), 'whsec_someone_else')
    const wrong = await post(signedElsewhere.body, signedElsewhere.headers)
    const missing = await post(signedElsewhere.body, { 'content-type': 'application/json' })

    expect(wrong.status).toBe(401)
    expect(wrong.body.error).toBe('invalid_signature')
    expect(missing.status).toBe(401)
    expect(missing.body.error).toBe('missing_signature')
    expect(runs).toBe(0)
    expect(errors.map((e) => e.code)).toEqual(['invalid_signature', 'missing_signature'])
  })

  it("logs a wrong or missing signature with the client's address, as the adapter knows it", async () => {
    const logged: LogFields[] = []
    const logger = { error() {}, warn: (fields: LogFields) => void logged.push(fields), info() {} }
    const webhooks = createWebhooks({ secret: SECRET, logger })
    const served = await listen(await makeApp(webhooks))
    closers.push(served.close)
    const signedElsewhere = await signedDelivery(sampleEvent('transaction_settled'), 'whsec_someone_else')
    const post = (headers: Record<string, string>) =>
      request(served.server).post('/webhooks').set(headers).send(signedElsewhere.body)
    expect((await post(signedElsewhere.headers)).status).toBe(401)
    expect((await post({ 'content-type': 'application/json' })).status).toBe(401)
    expect(logged.map((fields) => [fields.code, fields.source])).toEqual([
      ['invalid_signature', expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/)],
      ['missing_signature', expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/)],
    ])
  })

  it('answers 401 when one space is added to the signed body', async () => {
    const { webhooks, post } = await start()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const tampered = body.replace('"settlement_amount":', '"settlement_amount": ')
    expect(tampered.length).toBe(body.length + 1)

    const res = await post(tampered, headers)

    expect(res.status).toBe(401)
    expect(res.body.error).toBe('invalid_signature')
    expect(runs).toBe(0)
  })

  describe('a body over maxBodyBytes', () => {
    const maxBodyBytes = 1024
    const oversized = async () => {
      const event = sampleEvent('transaction_settled', {
        data: { transaction_description: 'x'.repeat(2 * maxBodyBytes) },
      })
      return signedDelivery(event, SECRET)
    }

    it('is answered 413 and no handler runs', async () => {
      const { webhooks, post, errors } = await start({ maxBodyBytes })
      let runs = 0
      webhooks.onAny(() => void runs++)
      const { body, headers } = await oversized()

      const res = await post(body, headers)

      expect(res.status).toBe(413)
      expect(res.body.error).toBe('payload_too_large')
      expect(runs).toBe(0)
      expect(errors.map((e) => e.code)).toEqual(['payload_too_large'])
    })

    it('is refused from its content-length, before the body is sent', async () => {
      const { webhooks, url } = await start({ maxBodyBytes })
      let runs = 0
      webhooks.onAny(() => void runs++)
      const { body, headers } = await oversized()

      const res = await postUnfinished(
        `${url}/webhooks`,
        { ...headers, 'content-length': String(10 * 1024 * 1024) },
        body.slice(0, 100),
      )

      expect(res.status).toBe(413)
      expect(runs).toBe(0)
    })

    it('is refused once a chunked body passes the limit, without waiting for its end', async () => {
      const { webhooks, url } = await start({ maxBodyBytes })
      let runs = 0
      webhooks.onAny(() => void runs++)
      const { body, headers } = await oversized()

      const res = await postUnfinished(`${url}/webhooks`, headers, body)

      expect(res.status).toBe(413)
      expect(JSON.parse(res.body).error).toBe('payload_too_large')
      expect(runs).toBe(0)
    })
  })

  it('answers 405 to any method but POST, with Allow: POST, and runs nothing', async () => {
    const { webhooks, server } = await start()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const get = await request(server).get('/webhooks')
    const put = await request(server).put('/webhooks').set(headers).send(body)

    for (const res of [get, put]) {
      expect(res.status).toBe(405)
      expect(res.headers.allow).toBe('POST')
      expect(res.body.error).toBe('method_not_allowed')
    }
    expect(runs).toBe(0)
  })

  it('answers 500 when a handler fails, then runs it again on redelivery and answers 200', async () => {
    const { webhooks, post, errors } = await start()
    let runs = 0
    webhooks.on('transaction_settled', () => {
      runs++
      if (runs === 1) throw new Error('ledger offline')
    })
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const first = await post(body, headers)
    expect(first.status).toBe(500)
    expect(first.body.error).toBe('handler_failed')
    expect(first.text).not.toContain('ledger offline') // thrown text goes to onError, never to the caller
    expect(errors[0]?.message).toContain('ledger offline')

    const retry = await post(body, headers)
    expect(retry.status).toBe(200)
    expect(retry.body.status).toBe('processed')
    expect(runs).toBe(2)
  })

  it('answers a retryable 503 by the deadline while the handler runs on, and dedupes the redelivery', async () => {
    const deadlineMs = 300
    const { webhooks, post, errors } = await start({ deadlineMs })
    const release = deferred()
    const finished = deferred()
    let runs = 0
    webhooks.on('transaction_settled', async () => {
      runs++
      await release.promise
      finished.resolve()
    })
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, SECRET)

    const startedAt = performance.now()
    const late = await post(body, headers)
    const elapsed = performance.now() - startedAt

    expect(late.status).toBe(503)
    expect(late.headers['retry-after']).toBeDefined()
    expect(late.body.error).toBe('deadline_exceeded')
    expect(elapsed).toBeLessThan(deadlineMs + 3000)
    expect(errors[0]).toBeInstanceOf(WebhookError)

    release.resolve()
    await finished.promise
    await new Promise((resolve) => setImmediate(resolve))

    const redelivery = await post(body, headers)
    expect(redelivery.status).toBe(200)
    expect(redelivery.body).toEqual({ ok: true, event_id: event.event_id, status: 'duplicate' })
    expect(runs).toBe(1)
  })
})
