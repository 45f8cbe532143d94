// Express apps where other middleware touches the body before the webhook route.
import { RawBodyUnavailableError } from '@payhooks/core'
import { expressWebhooks, keepRawBody } from '@payhooks/express'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type express from 'express'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { expressVersions, listen, SECRET, type TestWebhooks, testWebhooks } from '../fixtures/apps.js'
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

describe.each(expressVersions)('$name: adapter behind body parsers', ({ express }) => {
  async function start(build: (app: express.Express, webhooks: TestWebhooks) => void) {
    const { webhooks, errors } = testWebhooks()
    const seen: string[] = []
    webhooks.onAny((event) => void seen.push(event.event_id))
    const app = express()
    build(app, webhooks)
    const served = await listen(app)
    closers.push(served.close)
    return { agent: request(served.server), errors, seen }
  }

  it.each([
    ['express.json()', () => express.json()],
    ["express.text({ type: '*/*' })", () => express.text({ type: '*/*' })],
  ])('answers 500 raw_body_unavailable, saying how to fix it, when %s ran first', async (_name, parser) => {
    const { agent, errors, seen } = await start((app, webhooks) => {
      app.use(parser())
      app.post('/webhooks', expressWebhooks(webhooks))
    })
    const { body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(500)
    expect(res.body.error).toBe('raw_body_unavailable')
    expect(res.body.message).toContain('before express.json()')
    expect(res.body.message).toContain('express.json({ verify: keepRawBody })')
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError)
    expect(seen).toEqual([])
  })

  it('works behind express.json({ verify: keepRawBody }), which other routes still parse with', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(express.json({ verify: keepRawBody }))
      app.post('/webhooks', expressWebhooks(webhooks))
      app.post('/api/echo', (req, res) => {
        res.json({ parsed: req.body })
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

  it("uses the Buffer left by express.raw({ type: '*/*' })", async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(express.raw({ type: '*/*' }))
      app.post('/webhooks', expressWebhooks(webhooks))
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)
    const tampered = await agent.post('/webhooks').set(headers).send(body.replace('{', '{ '))

    expect(res.status).toBe(200)
    expect(tampered.status).toBe(401)
    expect(seen).toEqual([event.event_id])
  })

  it('leaves JSON bodies to the route when express.urlencoded() runs first', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(express.urlencoded({ extended: false }))
      app.post('/webhooks', expressWebhooks(webhooks))
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })

  it('uses a req.rawBody Buffer set by another layer', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use((req, _res, next) => {
        const chunks: Buffer[] = []
        req.on('data', (chunk: Buffer) => chunks.push(chunk))
        req.on('end', () => {
          Object.assign(req, { rawBody: Buffer.concat(chunks) })
          next()
        })
      })
      app.post('/webhooks', expressWebhooks(webhooks))
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })

  it('verifies a req.rawBody string some layer decoded, putting back the byte order mark it dropped', async () => {
    const { agent, seen, errors } = await start((app, webhooks) => {
      app.use((req, _res, next) => {
        const chunks: Buffer[] = []
        req.on('data', (chunk: Buffer) => chunks.push(chunk))
        req.on('end', () => {
          Object.assign(req, { rawBody: new TextDecoder().decode(Buffer.concat(chunks)) }) // drops the BOM
          next()
        })
      })
      app.post('/webhooks', expressWebhooks(webhooks))
    })
    const { event, bytes, headers } = await bomDelivery()

    const res = await agent.post('/webhooks').set(headers).send(bytes.toString('utf8'))

    expect(errors).toEqual([])
    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })

  it('takes the bytes from the rawBody option when an app keeps them elsewhere', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(express.json({ verify: (req, _res, buf) => ((req as { signedBytes?: Buffer }).signedBytes = buf) }))
      app.post(
        '/webhooks',
        expressWebhooks(webhooks, { rawBody: (req) => (req as { signedBytes?: Buffer }).signedBytes }),
      )
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(200)
    expect(seen).toEqual([event.event_id])
  })
})
