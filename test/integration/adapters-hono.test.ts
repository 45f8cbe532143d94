// Hono apps where a middleware reads the body before the webhook route.
import { getRequestListener } from '@hono/node-server'
import { RawBodyUnavailableError } from '@payhooks/core'
import { honoWebhooks } from '@payhooks/hono'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { type Context, Hono, type Next } from 'hono'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { listen, SECRET, type TestWebhooks, testWebhooks } from '../fixtures/apps.js'
import { bomDelivery } from '../fixtures/hostile.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

function build(middleware: ((c: Context, next: Next) => Promise<void>) | undefined, webhooks: TestWebhooks) {
  const app = new Hono()
  if (middleware) app.use('/webhooks', middleware)
  app.post('/webhooks', honoWebhooks(webhooks))
  return app
}

async function start(middleware?: (c: Context, next: Next) => Promise<void>) {
  const { webhooks, errors } = testWebhooks()
  const seen: string[] = []
  webhooks.onAny((event) => void seen.push(event.event_id))
  const app = build(middleware, webhooks)
  const served = await listen(getRequestListener(app.fetch))
  closers.push(served.close)
  return { agent: request(served.server), errors, seen, app }
}

/** Pretty-printed, so a receiver that re-serialized parsed JSON would compute another signature. */
async function prettyDelivery() {
  const event = sampleEvent('transaction_settled')
  return { event, ...(await signedDelivery(JSON.stringify(event, null, 2), SECRET)) }
}

describe('hono adapter after middleware that read the body', () => {
  it.each([
    ['c.req.text()', (c: Context) => c.req.text()],
    ['c.req.arrayBuffer()', (c: Context) => c.req.arrayBuffer()],
    ['c.req.blob()', (c: Context) => c.req.blob()],
    ['c.req.json() (cached by Hono as text)', (c: Context) => c.req.json()],
  ])('uses the body Hono cached for %s', async (_name, read) => {
    const { agent, seen } = await start(async (c, next) => {
      await read(c)
      await next()
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)
    const tampered = await agent.post('/webhooks').set(headers).send(body.replace('{', '{ '))

    expect(res.status).toBe(200)
    expect(res.body.status).toBe('processed')
    expect(tampered.status).toBe(401)
    expect(seen).toEqual([event.event_id])
  })

  it.each([
    ['c.req.text()', (c: Context) => c.req.text()],
    ['c.req.json()', (c: Context) => c.req.json()],
  ])(
    'verifies a body with a byte order mark and non-ASCII letters after %s, which keeps only text',
    async (_name, read) => {
      const { agent, seen, errors } = await start(async (c, next) => {
        await read(c)
        await next()
      })
      const { event, bytes, headers } = await bomDelivery()

      // Hono decoded the bytes and dropped the BOM; content-length says it was there, so it is put back.
      const res = await agent.post('/webhooks').set(headers).send(bytes.toString('utf8'))

      expect(errors).toEqual([])
      expect(res.status).toBe(200)
      expect(seen).toEqual([event.event_id])
    },
  )

  it.each([
    // What older Hono's c.req.json() left: the parsed value only, never the text.
    [
      'only parsed JSON is cached',
      (c: Context) => {
        c.req.bodyCache.json = c.req.raw.json()
      },
    ],
    ['the raw request was read directly', async (c: Context) => void (await c.req.raw.text())],
  ])('answers 500 raw_body_unavailable, saying how to fix it, when %s', async (_name, consume) => {
    const { agent, errors, seen } = await start(async (c, next) => {
      await consume(c)
      await next()
    })
    const { body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(500)
    expect(res.body.error).toBe('raw_body_unavailable')
    expect(res.body.message).toContain('c.req.text()')
    expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError)
    expect(seen).toEqual([])
  })

  it('takes the body from the rawBody option when an app keeps it elsewhere', async () => {
    const { webhooks, errors } = testWebhooks()
    const seen: string[] = []
    webhooks.onAny((event) => void seen.push(event.event_id))
    const app = new Hono<{ Variables: { signed: string } }>()
    app.use('/webhooks', async (c, next) => {
      c.set('signed', await c.req.raw.text())
      await next()
    })
    app.post('/webhooks', honoWebhooks(webhooks, { rawBody: (c) => c.get('signed') }))
    const { event, body, headers } = await prettyDelivery()

    const res = await app.request('/webhooks', { method: 'POST', body, headers })

    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
    expect(errors).toEqual([])
  })

  it('runs on the fetch API alone, without a Node server', async () => {
    const { webhooks } = testWebhooks({ maxBodyBytes: 1024 })
    const app = build(undefined, webhooks)
    const { body, headers } = await prettyDelivery()
    const big = await signedDelivery(
      sampleEvent('transaction_settled', { data: { transaction_description: 'x'.repeat(2048) } }),
      SECRET,
    )

    const ok = await app.request('/webhooks', { method: 'POST', body, headers })
    const tooLarge = await app.request('/webhooks', { method: 'POST', body: big.body, headers: big.headers })

    expect(ok.status).toBe(200)
    expect(tooLarge.status).toBe(413)
  })
})
