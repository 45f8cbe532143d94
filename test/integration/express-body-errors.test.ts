// The documented Express set-up behind an app-wide parser, `express.json({ verify: keepRawBody })`, on Express 5 and
// 4: a body the parser refuses (malformed, over its limit, a charset it does not know) on the webhook route gets the
// receiver's one line of JSON from `expressWebhookErrors`, never Express's HTML error page with its stack trace.
// Without it (today's documented set-up) those requests got `<!DOCTYPE html>…SyntaxError… at JSON.parse`.
import { sign } from '@payhooks/core'
import { expressWebhookErrors, expressWebhooks, keepRawBody } from '@payhooks/express'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type express from 'express'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { expressVersions, listen, SECRET, type TestWebhooks, testWebhooks } from '../fixtures/apps.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** One line of JSON with a fixed reason: no HTML, no stack, no parser's text. */
function expectOneLineOfJson(res: request.Response, error: string): void {
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  expect(res.text).not.toMatch(/\n|<|SyntaxError|Unexpected|at JSON\.parse|node_modules/)
  expect(JSON.parse(res.text)).toEqual({ error, message: expect.any(String) })
}

describe.each(expressVersions)('$name: body parser errors on the webhook route', ({ express }) => {
  async function start(mount: (app: express.Express, webhooks: TestWebhooks) => void) {
    const { webhooks, errors } = testWebhooks()
    const seen: string[] = []
    webhooks.onAny((event) => void seen.push(event.event_id))
    const app = express()
    app.use(express.json({ verify: keepRawBody }))
    app.all('/webhooks', expressWebhooks(webhooks))
    app.post('/api/echo', (req, res) => {
      res.json({ parsed: req.body })
    })
    mount(app, webhooks)
    const served = await listen(app)
    closers.push(served.close)
    return { agent: request(served.server), errors, seen }
  }
  const documented = (app: express.Express, webhooks: TestWebhooks) =>
    app.use(expressWebhookErrors(webhooks, { path: '/webhooks' }))
  const json = { 'content-type': 'application/json' }

  it('answers a malformed body with the receiver’s answer: 401 when wrongly signed, 400 invalid_json when signed', async () => {
    const { agent, errors, seen } = await start(documented)
    const malformed = '{"event_id": "evt_malformed", '
    const signed = await sign(SECRET, malformed)
    const wrong = await agent
      .post('/webhooks')
      .set({ ...json, 'service-hmac-sha256': 'A'.repeat(64) })
      .send(malformed)
    const right = await agent
      .post('/webhooks')
      .set({ ...json, 'service-hmac-sha256': signed })
      .send(malformed)
    expect(wrong.status).toBe(401)
    expectOneLineOfJson(wrong, 'invalid_signature')
    expect(right.status).toBe(400)
    expectOneLineOfJson(right, 'invalid_json')
    expect(errors.map((error) => error.code)).toEqual(['invalid_signature', 'invalid_json'])
    expect(seen).toEqual([])
  })

  it("answers a body over the parser's limit 413, or 401 when unsigned, in one line of JSON", async () => {
    const { agent, errors } = await start(documented)
    const big = JSON.stringify({ ...sampleEvent('transaction_settled'), pad: 'x'.repeat(150_000) })
    const signed = await agent
      .post('/webhooks')
      .set({ ...json, 'service-hmac-sha256': await sign(SECRET, big) })
      .send(big)
    const unsigned = await agent.post('/webhooks').set(json).send(big)
    expect(signed.status).toBe(413)
    expectOneLineOfJson(signed, 'payload_too_large')
    expect(unsigned.status).toBe(401)
    expectOneLineOfJson(unsigned, 'missing_signature')
    // The log says which limit refused it: the parser's (100kb by default), the one to raise.
    expect(errors.map((error) => [error.code, error.message])).toEqual([
      ['payload_too_large', 'body larger than 102400 bytes'],
      ['missing_signature', 'missing service-hmac-sha256 header'],
    ])
  })

  it('verifies and handles a delivery whose charset the parser refuses before reading it', async () => {
    const { agent, seen } = await start(documented)
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, SECRET)
    const res = await agent
      .post('/webhooks')
      .set({ ...headers, 'content-type': 'application/json; charset=latin1' })
      .send(body)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ ok: true, event_id: event.event_id, status: 'processed' })
    expect(seen).toEqual([event.event_id])
  })

  it("leaves other routes' errors and other errors to the app, and answers signed requests without a path", async () => {
    const { agent } = await start((app, webhooks) => {
      app.use(expressWebhookErrors(webhooks))
      app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
        res.status(418).json({ app: 'handled' })
      })
    })
    const elsewhere = await agent.post('/api/echo').set(json).send('{"broken": ')
    expect(elsewhere.status).toBe(418)
    expect(elsewhere.body).toEqual({ app: 'handled' })
    const unsigned = await agent.post('/webhooks').set(json).send('{"broken": ')
    expect(unsigned.status).toBe(418) // no path: only requests carrying the signature are the receiver's
    const wrong = await agent
      .post('/webhooks')
      .set({ ...json, 'service-hmac-sha256': 'B'.repeat(64) })
      .send('{"x": ')
    expect(wrong.status).toBe(401)
    expectOneLineOfJson(wrong, 'invalid_signature')
  })

  it('refuses a path that does not start with a slash when it is created', () => {
    const { webhooks } = testWebhooks()
    expect(() => expressWebhookErrors(webhooks, { path: 'webhooks' })).toThrow(TypeError)
  })
})
