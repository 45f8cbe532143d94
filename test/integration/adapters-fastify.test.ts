// The Fastify plugin inside real apps: its bytes parser stays in its own context, and the app's own
// parsers, body limit and error handler neither reach the webhook route nor are changed by it.
import { fastifyWebhooks } from '@payhooks/fastify'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type { FastifyInstance } from 'fastify'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { fastifyListener, listen, SECRET, testWebhooks } from '../fixtures/apps.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

async function start(build?: (app: FastifyInstance) => void | Promise<void>, maxBodyBytes?: number) {
  const { webhooks, errors } = testWebhooks(maxBodyBytes ? { maxBodyBytes } : {})
  const seen: string[] = []
  webhooks.onAny((event) => void seen.push(event.event_id))
  const served = await listen(await fastifyListener(webhooks, build))
  closers.push(served.close)
  return { agent: request(served.server), errors, seen }
}

/** Pretty-printed, so a receiver that re-serialized parsed JSON would compute another signature. */
async function prettyDelivery(overrides: Parameters<typeof sampleEvent>[1] = {}) {
  const event = sampleEvent('transaction_settled', overrides)
  return { event, ...(await signedDelivery(JSON.stringify(event, null, 2), SECRET)) }
}

describe('fastify plugin in an app', () => {
  it('leaves the JSON parser to the routes beside it', async () => {
    const { agent, seen } = await start()
    const { event, body, headers } = await prettyDelivery()

    const hook = await agent.post('/webhooks').set(headers).send(body)
    const echo = await agent.post('/api/echo').set('content-type', 'application/json').send('{"amount": 12.5}')
    const text = await agent.post('/api/echo').set('content-type', 'text/plain').send('plain words')

    expect(hook.status).toBe(200)
    expect(seen).toEqual([event.event_id])
    expect(echo.status).toBe(200)
    expect(echo.body).toEqual({ parsed: { amount: 12.5 } })
    expect(text.body).toEqual({ parsed: 'plain words' })
  })

  it.each([
    ['application/json'],
    ['application/json; charset=utf-8'],
    ['text/plain'],
    ['application/octet-stream'],
    ['application/x-www-form-urlencoded'],
    ['multipart/form-data; boundary=x'],
    ['not a media type'],
    [undefined],
  ])('verifies the exact bytes whatever the content type: %s', async (type) => {
    const { webhooks, errors } = testWebhooks()
    const seen: string[] = []
    webhooks.onAny((event) => void seen.push(event.event_id))
    const served = await listen(await fastifyListener(webhooks))
    closers.push(served.close)
    const { event, body, headers } = await prettyDelivery()
    const { 'content-type': _json, ...signature } = headers
    const send = (bytes: string) =>
      // fetch sends a Uint8Array body as is, with no content-type of its own.
      fetch(`${served.url}/webhooks`, {
        method: 'POST',
        body: new TextEncoder().encode(bytes),
        headers: type ? { ...signature, 'content-type': type } : signature,
      })

    const res = await send(body)
    const tampered = await send(body.replace('{', '{ '))

    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ status: 'processed' })
    expect(tampered.status).toBe(401)
    expect(seen).toEqual([event.event_id])
    expect(errors.map((e) => e.code)).toEqual(['invalid_signature'])
  })

  it("is not reached by the app's own content-type parsers", async () => {
    const { agent, seen } = await start((app) => {
      // A JSON parser that keeps only the parsed value, and a catch-all: neither may see webhook bodies.
      app.removeContentTypeParser('application/json')
      app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, text, done) => {
        done(null, { reparsed: JSON.parse(text as string) })
      })
      app.addContentTypeParser('*', (_request, _payload, done) => done(null, 'swallowed'))
    })
    const { event, body, headers } = await prettyDelivery()

    const hook = await agent.post('/webhooks').set(headers).send(body)
    const echo = await agent.post('/api/echo').set('content-type', 'application/json').send('{"a":1}')

    expect(hook.status).toBe(200)
    expect(seen).toEqual([event.event_id])
    expect(echo.body).toEqual({ parsed: { reparsed: { a: 1 } } })
  })

  it("takes maxBodyBytes as the webhook route's limit, apart from the app's bodyLimit, answering 413 in core's format", async () => {
    const maxBodyBytes = 4096
    const { agent, seen, errors } = await start(undefined, maxBodyBytes)
    const fits = await prettyDelivery({ data: { transaction_description: 'x'.repeat(2048) } })
    const over = await prettyDelivery({ data: { transaction_description: 'x'.repeat(2 * maxBodyBytes) } })

    const ok = await agent.post('/webhooks').set(fits.headers).send(fits.body)
    const tooLarge = await agent.post('/webhooks').set(over.headers).send(over.body)

    expect(ok.status).toBe(200)
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.headers['content-type']).toMatch(/^application\/json/)
    expect(tooLarge.body).toEqual({ error: 'payload_too_large', message: 'body larger than this receiver accepts' })
    expect(tooLarge.headers.connection).toBe('close')
    expect(seen).toEqual([fits.event.event_id])
    expect(errors.map((e) => e.code)).toEqual(['payload_too_large'])
  })

  it("leaves the app's bodyLimit and its 413 to the app's routes", async () => {
    const { webhooks } = testWebhooks()
    const served = await listen(await fastifyListener(webhooks, undefined, { bodyLimit: 256 }))
    closers.push(served.close)
    const agent = request(served.server)
    const { body, headers } = await prettyDelivery({ data: { transaction_description: 'x'.repeat(1024) } })

    const hook = await agent.post('/webhooks').set(headers).send(body)
    const echo = await agent.post('/api/echo').set('content-type', 'application/json').send(body)

    expect(hook.status).toBe(200)
    expect(echo.status).toBe(413)
    expect(echo.body.code).toBe('FST_ERR_CTP_BODY_TOO_LARGE')
  })

  it('answers another method 405 before reading its body, however large', async () => {
    const { agent, errors } = await start(undefined, 1024)
    const { body, headers } = await prettyDelivery({ data: { transaction_description: 'x'.repeat(4096) } })

    const res = await agent.put('/webhooks').set(headers).send(body)

    expect(res.status).toBe(405)
    expect(res.headers.allow).toBe('POST')
    expect(errors.map((e) => e.code)).toEqual(['method_not_allowed'])
  })

  it('registers again under a prefix, each registration with its own receiver', async () => {
    const other = testWebhooks()
    const otherSeen: string[] = []
    other.webhooks.onAny((event) => void otherSeen.push(event.event_id))
    const { agent, seen } = await start((app) => {
      app.register(fastifyWebhooks, { webhooks: other.webhooks, prefix: '/payments' })
    })
    const first = await prettyDelivery()
    const second = await prettyDelivery()

    expect((await agent.post('/webhooks').set(first.headers).send(first.body)).status).toBe(200)
    expect((await agent.post('/payments/webhooks').set(second.headers).send(second.body)).status).toBe(200)
    expect(seen).toEqual([first.event.event_id])
    expect(otherSeen).toEqual([second.event.event_id])
  })

  it("passes errors from the app's own hooks to the app's error handler", async () => {
    const { agent, seen } = await start((app) => {
      app.setErrorHandler(async (_error, _request, reply) => reply.code(403).send({ blocked: true }))
      app.addHook('onRequest', async (request) => {
        if (request.headers['x-blocked']) throw new Error('blocked by the app')
      })
    })
    const { body, headers } = await prettyDelivery()

    const blocked = await agent
      .post('/webhooks')
      .set({ ...headers, 'x-blocked': '1' })
      .send(body)
    const ok = await agent.post('/webhooks').set(headers).send(body)

    expect(blocked.status).toBe(403)
    expect(blocked.body).toEqual({ blocked: true })
    expect(ok.status).toBe(200)
    expect(seen).toHaveLength(1)
  })
})
