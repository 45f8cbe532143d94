// A sender without the secret costs nothing: a POST without the signature header is answered 401 before its body
// is read, and its connection closed, on every entry point (real servers, raw sockets: a body that announces 1 MB
// and trickles a byte at a time). Its refusal is logged at warn, at most once a second per reason with a count,
// and left out of the latency of signed deliveries.
import { getRequestListener } from '@hono/node-server'
import { createWebhooks, type LogFields } from '@payhooks/core'
import { nodeWebhooks } from '@payhooks/core/node'
import { lambdaWebhooks } from '@payhooks/lambda'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type AdapterApp, adapterApps, listen, SECRET, testWebhooks } from '../fixtures/apps.js'
import { lambdaEvent, lambdaEventKinds, resultHeader } from '../fixtures/lambda-events.js'
import { rawPost } from '../fixtures/requests.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

const ANNOUNCED = 1024 * 1024
const TRICKLE_MS = 100
const entryPoints: AdapterApp[] = [
  ...adapterApps,
  { name: 'web Request (webhooks.handle)', makeApp: (webhooks) => getRequestListener((req) => webhooks.handle(req)) },
]

const answerJson = (body: string) =>
  JSON.parse(
    body
      .split('\r\n')
      .map((line) => line.trim())
      .find((line) => line.startsWith('{')) ?? '{}',
  )

describe.each(entryPoints)('$name', ({ makeApp }) => {
  it('answers a POST without the signature header 401 at once, its trickling 1 MB body unread, and closes', async () => {
    // A deadline far off: the old behaviour (read the body first) answers 408 only then.
    const { webhooks, errors } = testWebhooks({ deadlineMs: 3000, maxBodyBytes: 2 * ANNOUNCED })
    let runs = 0
    webhooks.onAny(() => void runs++)
    const served = await listen(await makeApp(webhooks))
    closers.push(served.close)

    const answer = await rawPost(
      `${served.url}/webhooks`,
      { 'content-type': 'application/json', 'content-length': String(ANNOUNCED) },
      () => 'x',
      { intervalMs: TRICKLE_MS },
    )

    expect(answer.status).toBe(401)
    expect(answerJson(answer.body)).toEqual({
      error: 'missing_signature',
      message: 'missing service-hmac-sha256 header',
    })
    expect(answer.headers.connection).toBe('close')
    expect(answer.closedByServer).toBe(true)
    // Answered within the first few bytes of the trickle (one each 100 ms): well under a second, not at the deadline.
    expect(answer.bytesSent).toBeLessThan(8)
    expect(errors.map((error) => error.code)).toEqual(['missing_signature'])
    expect(runs).toBe(0)
    // The server still answers a signed delivery.
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    expect((await fetch(`${served.url}/webhooks`, { method: 'POST', body, headers })).status).toBe(200)
  })
})

describe.each(lambdaEventKinds)('lambda, $name events', ({ kind }) => {
  it('answers an event without the signature header 401 without reading its body', async () => {
    const { webhooks, errors } = testWebhooks()
    const handler = lambdaWebhooks(webhooks)
    const event = lambdaEvent(kind, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    let bodyReads = 0
    Object.defineProperty(event, 'body', {
      get: () => {
        bodyReads++
        return Buffer.alloc(ANNOUNCED, 'x').toString('base64')
      },
    })
    Object.defineProperty(event, 'isBase64Encoded', { value: true })

    const result = await handler(event)

    expect(result.statusCode).toBe(401)
    expect(JSON.parse(result.body)).toMatchObject({ error: 'missing_signature' })
    expect(resultHeader(result, 'connection')).toBeUndefined()
    expect(bodyReads).toBe(0)
    expect(errors.map((error) => error.code)).toEqual(['missing_signature'])
  })
})

describe('refusals of unsigned and wrongly signed requests', () => {
  it('are logged at warn once a second per reason and address with a count, and kept out of the latency of signed deliveries', async () => {
    const lines: { level: string; fields: LogFields; message: string }[] = []
    const logger = {
      error: (fields: LogFields, message?: string) =>
        void lines.push({ level: 'error', fields, message: `${message}` }),
      warn: (fields: LogFields, message?: string) => void lines.push({ level: 'warn', fields, message: `${message}` }),
      info: () => {},
    }
    // No onError listener: failures go to the logger.
    const logged = createWebhooks({ secret: SECRET, logger })
    const served = await listen(nodeWebhooks(logged))
    closers.push(served.close)

    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const wrong = { ...headers, 'service-hmac-sha256': 'A'.repeat(64) }
    const unsigned = { 'content-type': 'application/json' }
    const post = (h: Record<string, string>, b = body) =>
      fetch(`${served.url}/webhooks`, { method: 'POST', body: b, headers: h })
    const started = performance.now()
    const answers = await Promise.all([
      ...Array.from({ length: 40 }, () => post(unsigned)),
      ...Array.from({ length: 20 }, () => post(wrong)),
    ])
    expect(answers.map((answer) => answer.status)).toEqual(Array(60).fill(401))
    const signed = await Promise.all(
      Array.from({ length: 5 }, async (_, i) => {
        const delivery = await signedDelivery(
          sampleEvent('transaction_settled', { eventId: `evt_signed_${i}` }),
          SECRET,
        )
        return (await post(delivery.headers, delivery.body)).status
      }),
    )
    expect(signed).toEqual(Array(5).fill(200))

    const refusals = () =>
      lines.filter((line) => line.fields.code === 'missing_signature' || line.fields.code === 'invalid_signature')
    const accounted = (code: string) =>
      refusals()
        .filter((line) => line.fields.code === code)
        .reduce((sum, line) => sum + (line.fields.suppressed === undefined ? 1 : Number(line.fields.suppressed)), 0)
    // Past each window's last refusal its closing line comes within 1 s: waited for, as a loaded machine's timer may
    // fire late (a fixed 1.1 s wait came first).
    await vi.waitFor(() => expect([accounted('missing_signature'), accounted('invalid_signature')]).toEqual([40, 20]), {
      timeout: 10_000,
      interval: 20,
    })
    const elapsed = (performance.now() - started) / 1000
    const all = refusals()
    expect(all.every((line) => line.level === 'warn')).toBe(true)
    // A window's first refusal is written at once, the rest counted and told in one line at its end. How many windows
    // the burst spans depends on the machine (one quiet, two or three with two whole test runs beside: 3 lines, not
    // 2, by the time the signed deliveries were answered), so what is checked is what the lines tell.
    for (const [code, refused] of [
      ['missing_signature', 40],
      ['invalid_signature', 20],
    ] as const) {
      const own = all.filter((line) => line.fields.code === code)
      const told = own.filter((line) => line.fields.suppressed !== undefined)
      // Every refusal is in a line: written itself, or counted in its window's closing line.
      const counted = told.reduce((sum, line) => sum + Number(line.fields.suppressed), 0)
      expect(own.length - told.length + counted).toBe(refused)
      expect(told.length).toBeGreaterThan(0)
      // At most two lines a second (a window's first and its count), not one a refusal.
      expect(own.length).toBeLessThanOrEqual(2 * Math.ceil(elapsed))
      for (const line of told) {
        expect(line.fields.source).toBe('127.0.0.1')
        expect(line.message).toMatch(
          new RegExp(`and ${line.fields.suppressed} more like it from 127\\.0\\.0\\.1 in the last 1 s`),
        )
      }
    }

    const stats = logged.stats()
    expect(stats.refused).toEqual({ count: 60, missingSignature: 40, invalidSignature: 20 })
    expect(stats.deliveries.total).toMatchObject({ missing_signature: 40, invalid_signature: 20, processed: 5 })
    expect(stats.latency.count).toBe(5)
  })
})
