// A flood of unsigned bodies shaped to make the signature doctor work hard, posted to a real node:http receiver
// (nodeWebhooks) on loopback with any 64-hex signature, and a valid delivery sent while they are in flight: every
// hostile request is answered 401 with a hint in onError, the valid one 200 with its handler run. Before the
// doctor's work was bounded, one 64 KiB body of deep arrays held the event loop ~14 s: this test timed out.
import { SignatureError } from '@payhooks/core'
import { nodeWebhooks } from '@payhooks/core/node'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { listen, SECRET, testWebhooks } from '../fixtures/apps.js'
import { hostileBodies } from '../fixtures/hostile-bodies.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

const COPIES = 3
const hex = (i: number) => (i * 7919).toString(16).toUpperCase().padStart(64, 'F').slice(-64)

describe('a node:http receiver flooded with hostile unsigned bodies', () => {
  it('answers each 401 and a valid delivery sent meanwhile 200, its handler run once', async () => {
    const { webhooks, errors } = testWebhooks({ logger: { error() {} } })
    const handled: string[] = []
    webhooks.on('transaction_settled', (event) => void handled.push(event.event_id))
    const served = await listen(nodeWebhooks(webhooks))
    closers.push(served.close)
    const url = `${served.url}/webhooks`
    const post = (body: Uint8Array | string, signature: string) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'service-hmac-sha256': signature },
        // A copy on its own ArrayBuffer: what fetch's BodyInit takes.
        body: typeof body === 'string' ? body : new Uint8Array(body),
      }).then(async (answer) => ({ status: answer.status, body: await answer.text() }))

    const shapes = Object.values(hostileBodies)
    const hostile = Array.from({ length: COPIES }, () => shapes)
      .flat()
      .map((body, i) => post(body, hex(i + 1)))
    const event = sampleEvent('transaction_settled', { eventId: 'evt_doctor_flood_valid' })
    const valid = await signedDelivery(event, SECRET)
    const answer = await post(valid.body, valid.headers['service-hmac-sha256'])

    expect(answer.status).toBe(200)
    expect(handled).toEqual(['evt_doctor_flood_valid'])
    const refused = await Promise.all(hostile)
    expect(refused).toHaveLength(COPIES * shapes.length)
    for (const { status, body } of refused) {
      expect(status).toBe(401)
      expect(JSON.parse(body)).toEqual({ error: 'invalid_signature', message: expect.any(String) })
    }
    expect(errors).toHaveLength(refused.length)
    for (const error of errors) {
      expect(error).toBeInstanceOf(SignatureError)
      expect((error as SignatureError).hint).toEqual({ code: expect.any(String), message: expect.any(String) })
    }
  })
})
