import { createHash } from 'node:crypto'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readmeConfig, startNginx, webhookLocation } from '../fixtures/nginx.mjs'
import { rawPost } from '../fixtures/raw-post.mjs'
import { startTimingReceiver, TIMING_SECRET } from '../fixtures/timing-receiver.mjs'

// Real nginx (Debian's package) in front of a node:http receiver, with the configuration of "Behind a proxy" in
// docs/guide/production.md (the core README's "Running behind a proxy" before issue 34): every delivery is answered before the service's 10 s, however its body arrives, and
// the bytes reach the receiver as sent.
const LIMIT_MS = 10_000
type Receiver = Awaited<ReturnType<typeof startTimingReceiver>>
type Nginx = Awaited<ReturnType<typeof startNginx>>
let documented: { receiver: Receiver; nginx: Nginx }
let buffered: { receiver: Receiver; nginx: Nginx }

beforeAll(async () => {
  const start = async (location: string, serverParams?: string) => {
    const receiver = await startTimingReceiver({ proxyArrival: { header: 'x-request-start' } })
    return { receiver, nginx: await startNginx({ upstreams: [receiver.port], location, serverParams }) }
  }
  const readme = readmeConfig()
  documented = await start(readme.location, readme.serverParams)
  buffered = await start(webhookLocation({ buffering: true }))
})

afterAll(async () => {
  for (const { receiver, nginx } of [documented, buffered]) {
    await nginx?.stop()
    await receiver?.close()
  }
})

let ids = 0
/** A signed transaction_settled whose handler sleeps `sleep` ms, padded to `size` bytes when given. */
async function delivery(options: { sleep?: number; size?: number } = {}) {
  const description = options.size ? '' : `sleep:${options.sleep ?? 0}`
  const event = sampleEvent('transaction_settled', { data: { transaction_description: description } })
  let body = JSON.stringify(event)
  if (options.size)
    body = body.replace(
      '"transaction_description":""',
      `"transaction_description":"${'x'.repeat(options.size - body.length)}"`,
    )
  const signed = await signedDelivery(body, TIMING_SECRET)
  const id = String(++ids)
  return { id, eventId: event.event_id as string, body, headers: { ...signed.headers, 'x-test-id': id } }
}

const sha256 = (body: string) => createHash('sha256').update(body).digest('hex')

describe('behind nginx with the documented configuration (request buffering off, X-Request-Start)', () => {
  it("is the production guide's, which the variants (bench/proxy-trial.mjs, the buffered setup below) are built from", () => {
    expect(readmeConfig().location).toBe(webhookLocation())
  })

  it('answers slow, stalled, chunked and 1 MiB bodies before 10 s, the bytes intact', async () => {
    const { port } = documented.nginx
    const [slow, stalled, chunked, mebibyte, forged] = await Promise.all([
      delivery(),
      delivery(),
      delivery(),
      delivery({ size: 1_048_576 }),
      delivery(),
    ])
    const answers = await Promise.all([
      rawPost({ port, ...slow, uploadMs: 7000 }),
      rawPost({ port, ...stalled, stallAfter: 100 }),
      rawPost({ port, ...chunked, chunked: true, uploadMs: 1500 }),
      rawPost({ port, ...mebibyte, uploadMs: 1000, slices: 20 }),
      // A client's own X-Request-Start, an instant that would make the receiver answer 408 at once if it got through.
      rawPost({
        port,
        ...forged,
        headers: { ...forged.headers, 'x-request-start': `t=${(Date.now() - 6000) / 1000}` },
      }),
    ])
    const [slowAnswer, stalledAnswer, chunkedAnswer, mebibyteAnswer, forgedAnswer] = answers
    expect(slowAnswer.status).toBe(408)
    expect(stalledAnswer.status).toBe(408)
    for (const answer of [slowAnswer, stalledAnswer]) {
      expect(answer.ms).toBeGreaterThan(4500)
      expect(answer.ms).toBeLessThan(LIMIT_MS)
    }
    // Said with a failure below: what the receiver refused and why, and what nginx logged of each request.
    const seen = () => JSON.stringify({ errors: documented.receiver.errors, nginx: documented.nginx.accessLog() })
    // Verified means the signed bytes arrived; the digests say so byte for byte (checked first: a wrong status
    // then means the receiver refused bytes that arrived intact).
    for (const sent of [chunked, mebibyte, forged])
      expect(documented.receiver.digests.get(sent.id), seen()).toBe(sha256(sent.body))
    expect([chunkedAnswer.status, mebibyteAnswer.status, forgedAnswer.status], seen()).toEqual([200, 200, 200])
    for (const answer of answers) expect(answer.ms).toBeLessThan(LIMIT_MS)
    expect(mebibyte.body).toHaveLength(1_048_576)
    expect(documented.receiver.handled).toEqual(
      expect.arrayContaining([chunked.eventId, mebibyte.eventId, forged.eventId]),
    )
    expect(documented.receiver.handled).not.toContain(slow.eventId)
    expect(documented.receiver.handled).not.toContain(stalled.eventId)
  }, 120_000)

  it('refuses a body over 1 MiB at nginx, as the receiver would', async () => {
    const big = await delivery({ size: 1_048_577 })
    const answer = await rawPost({ port: documented.nginx.port, ...big })
    expect(answer.status).toBe(413)
    expect(documented.receiver.digests.has(big.id)).toBe(false)
  })
})

describe('behind nginx buffering request bodies, with X-Request-Start', () => {
  it('counts the deadline from nginx: a 6 s upload with a 4 s handler is answered 408 as it reaches the receiver, not 200 at 10 s', async () => {
    const { port } = buffered.nginx
    const [late, stalled] = await Promise.all([delivery({ sleep: 4000 }), delivery()])
    const [lateAnswer, stalledAnswer] = await Promise.all([
      rawPost({ port, ...late, uploadMs: 6000 }),
      rawPost({ port, ...stalled, stallAfter: 100 }),
    ])
    expect(lateAnswer.status).toBe(408)
    expect(lateAnswer.ms).toBeGreaterThan(5500)
    expect(lateAnswer.ms).toBeLessThan(8000)
    expect(buffered.receiver.handled).not.toContain(late.eventId)
    // nginx's client_body_timeout (5 s) ends a stalled body; the receiver never sees it.
    expect(stalledAnswer.ms).toBeLessThan(LIMIT_MS)
    expect(buffered.receiver.digests.has(stalled.id)).toBe(false)
  }, 120_000)
})
