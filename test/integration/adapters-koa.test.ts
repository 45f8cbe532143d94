// Koa apps where a body parser runs before the webhook route.
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import { RawBodyUnavailableError } from '@payhooks/core'
import { koaWebhooks } from '@payhooks/koa'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type Koa from 'koa'
import getRawBody from 'raw-body'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { koaVersions, listen, SECRET, type TestWebhooks, testWebhooks } from '../fixtures/apps.js'
import { bomDelivery } from '../fixtures/hostile.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** Pretty-printed, so a receiver that re-serialized parsed JSON would compute another signature. */
async function prettyDelivery() {
  const event = sampleEvent('transaction_settled')
  return { event, ...(await signedDelivery(JSON.stringify(event, null, 2), SECRET)) }
}

describe.each(koaVersions)('$name: adapter behind body parsers', ({ Koa }) => {
  async function start(build: (app: Koa, router: Router, webhooks: TestWebhooks) => void) {
    const { webhooks, errors } = testWebhooks()
    const seen: string[] = []
    webhooks.onAny((event) => void seen.push(event.event_id))
    const app = new Koa()
    const router = new Router()
    build(app, router, webhooks)
    app.use(router.routes())
    const served = await listen(app.callback())
    closers.push(served.close)
    return { agent: request(served.server), errors, seen }
  }

  it('uses ctx.request.rawBody kept by @koa/bodyparser, and other routes still get the parsed body', async () => {
    const { agent, seen } = await start((app, router, webhooks) => {
      app.use(bodyParser())
      router.post('/webhooks', koaWebhooks(webhooks))
      router.post('/api/echo', (ctx) => {
        ctx.body = { parsed: ctx.request.body }
      })
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)
    const tampered = await agent.post('/webhooks').set(headers).send(body.replace('{', '{ '))
    const echo = await agent.post('/api/echo').send({ hello: 'world' })

    expect(res.status).toBe(200)
    expect(res.body.status).toBe('processed')
    expect(tampered.status).toBe(401)
    expect(seen).toEqual([event.event_id])
    expect(echo.body).toEqual({ parsed: { hello: 'world' } })
  })

  it('verifies a body with a byte order mark and non-ASCII letters behind @koa/bodyparser, which kept only text', async () => {
    const { agent, seen, errors } = await start((app, router, webhooks) => {
      app.use(bodyParser())
      router.post('/webhooks', koaWebhooks(webhooks))
    })
    const { event, bytes, headers } = await bomDelivery()

    // The parser decoded the bytes and dropped the BOM; content-length says it was there, so it is put back.
    const res = await agent.post('/webhooks').set(headers).send(bytes.toString('utf8'))

    expect(errors).toEqual([])
    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })

  it('reads the stream itself when @koa/bodyparser skipped the content type', async () => {
    const { agent, seen } = await start((app, router, webhooks) => {
      app.use(bodyParser({ enableTypes: ['form'] }))
      router.post('/webhooks', koaWebhooks(webhooks))
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })

  it('answers 500 raw_body_unavailable, saying how to fix it, after a parser that kept no raw body', async () => {
    const { agent, errors, seen } = await start((app, router, webhooks) => {
      app.use(async (ctx, next) => {
        ;(ctx.request as { body?: unknown }).body = JSON.parse(await getRawBody(ctx.req, 'utf8'))
        await next()
      })
      router.post('/webhooks', koaWebhooks(webhooks))
    })
    const { body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(500)
    expect(res.body.error).toBe('raw_body_unavailable')
    expect(res.body.message).toContain('before the body parser')
    expect(res.body.message).toContain('ctx.request.rawBody')
    expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError)
    expect(seen).toEqual([])
  })

  it('takes the bytes from the rawBody option when an app keeps them elsewhere', async () => {
    const { agent, seen } = await start((app, router, webhooks) => {
      app.use(async (ctx, next) => {
        ctx.state.signedBytes = await getRawBody(ctx.req)
        await next()
      })
      router.post('/webhooks', koaWebhooks(webhooks, { rawBody: (ctx: Koa.Context) => ctx.state.signedBytes }))
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })
})
