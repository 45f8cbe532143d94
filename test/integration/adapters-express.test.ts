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

/** An app from `createApp` (Express 5 or 4) built by `build`, served on loopback, and what its receiver saw. */
async function startApp(
  createApp: (typeof expressVersions)[number]['express'],
  build: (app: express.Express, webhooks: TestWebhooks) => void,
) {
  const { webhooks, errors } = testWebhooks()
  const seen: string[] = []
  webhooks.onAny((event) => void seen.push(event.event_id))
  const app = createApp()
  build(app, webhooks)
  const served = await listen(app)
  closers.push(served.close)
  return { agent: request(served.server), errors, seen }
}

describe.each(expressVersions)('$name: adapter behind body parsers', ({ express }) => {
  const start = (build: (app: express.Express, webhooks: TestWebhooks) => void) => startApp(express, build)

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

describe.each(expressVersions)('$name: a rawBody option that throws', ({ express }) => {
  const failure = new Error('rawBody lookup failed: secret-ish detail')
  const rawBody = () => {
    throw failure
  }
  it.each([
    [
      'app.post',
      (app: express.Express, webhooks: TestWebhooks) => app.post('/webhooks', expressWebhooks(webhooks, { rawBody })),
    ],
    [
      'app.use with a path',
      (app: express.Express, webhooks: TestWebhooks) =>
        app.use(expressWebhooks(webhooks, { rawBody, path: '/webhooks' })),
    ],
  ])('is answered 500 internal_error and reported (%s), and the app answers on', async (_name, mount) => {
    const { webhooks, errors } = testWebhooks()
    const app = express()
    mount(app, webhooks)
    app.get('/health', (_req, res) => {
      res.json({ ok: true })
    })
    const served = await listen(app)
    closers.push(served.close)
    const agent = request(served.server)
    const { body, headers } = await prettyDelivery()

    const res = await agent.post('/webhooks').set(headers).send(body)
    const health = await agent.get('/health')

    expect(res.status).toBe(500)
    expect(res.body.error).toBe('internal_error')
    expect(res.text).not.toContain('secret-ish')
    expect(errors.map((error) => error.cause)).toEqual([failure])
    expect(health.body).toEqual({ ok: true })
  })
})

describe.each(expressVersions)('$name: adapter as app-wide middleware with a path', ({ express }) => {
  const start = (build: (app: express.Express, webhooks: TestWebhooks) => void) => startApp(express, build)

  it('answers its path (with a query string or a trailing slash) and hands every other path to next', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(expressWebhooks(webhooks, { path: '/webhooks' }))
      app.use(express.json())
      app.post('/webhooks-archive', (_req, res) => {
        res.json({ route: 'archive' })
      })
      app.post('/api/echo', (req, res) => {
        res.json({ parsed: req.body })
      })
    })
    const deliveries = await Promise.all(
      ['evt_mw_1', 'evt_mw_2', 'evt_mw_3'].map((eventId) =>
        signedDelivery(sampleEvent('transaction_settled', { eventId }), SECRET),
      ),
    )
    const [first, second, third] = deliveries as [
      (typeof deliveries)[0],
      (typeof deliveries)[0],
      (typeof deliveries)[0],
    ]

    const plain = await agent.post('/webhooks').set(first.headers).send(first.body)
    const query = await agent.post('/webhooks?source=retry').set(second.headers).send(second.body)
    const slash = await agent.post('/webhooks/').set(third.headers).send(third.body)
    const archive = await agent.post('/webhooks-archive').send({})
    const echo = await agent.post('/api/echo').send({ hello: 'world' })
    const missing = await agent.post('/webhooks/extra').set(first.headers).send(first.body)

    expect([plain.status, plain.body.status]).toEqual([200, 'processed'])
    expect(plain.headers['content-length']).toBe(String(Buffer.byteLength(plain.text)))
    expect([query.status, slash.status]).toEqual([200, 200])
    expect(archive.body).toEqual({ route: 'archive' })
    expect(echo.body).toEqual({ parsed: { hello: 'world' } })
    expect(missing.status).toBe(404)
    expect(seen).toEqual(['evt_mw_1', 'evt_mw_2', 'evt_mw_3'])
  })

  it('refuses a path that does not start with a slash when it is created', () => {
    const { webhooks } = testWebhooks()
    for (const path of ['', 'webhooks']) {
      expect(() => expressWebhooks(webhooks, { path })).toThrow(
        new TypeError(`expressWebhooks: path must be a string starting with '/', got ${JSON.stringify(path)}`),
      )
    }
  })

  it('answers 405 with Allow: POST to another method on its path, and runs nothing', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(expressWebhooks(webhooks, { path: '/webhooks' }))
    })

    const res = await agent.get('/webhooks')

    expect(res.status).toBe(405)
    expect(res.headers.allow).toBe('POST')
    expect(seen).toEqual([])
  })

  it('compares the path after a mount path, and keeps the bytes express.json({ verify: keepRawBody }) kept', async () => {
    const { agent, seen } = await start((app, webhooks) => {
      app.use(express.json({ verify: keepRawBody }))
      app.use('/payments', expressWebhooks(webhooks, { path: '/webhooks' }))
    })
    const { event, body, headers } = await prettyDelivery()

    const res = await agent.post('/payments/webhooks').set(headers).send(body)
    const tampered = await agent.post('/payments/webhooks').set(headers).send(body.replace('{', '{ '))
    const elsewhere = await agent.post('/webhooks').set(headers).send(body)

    expect(res.status).toBe(200)
    expect(tampered.status).toBe(401)
    expect(elsewhere.status).toBe(404)
    expect(seen).toEqual([event.event_id])
  })
})
