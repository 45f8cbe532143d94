// Hostile input and faults against every Node-served adapter (Express 4 and 5, Koa 2 and 3, Hono on
// @hono/node-server, Fastify): slow bodies, floods past the size limit, thrown errors carrying secrets, replays,
// and bodies whose bytes are not plain ASCII. Raw node:net clients, so nothing smooths over what the server does.
// Then the Lambda handler, whose body arrives whole, on the faults that still apply to it.
import http2 from 'node:http2'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import Router from '@koa/router'
import { StaleEventError } from '@payhooks/core'
import { fastifyWebhooks } from '@payhooks/fastify'
import { honoWebhooks } from '@payhooks/hono'
import { koaWebhooks } from '@payhooks/koa'
import { lambdaWebhooks } from '@payhooks/lambda'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { adapterApps, listen, SECRET, type TestWebhooks, testWebhooks } from '../fixtures/apps.js'
import { bomDelivery, eventAged, LEAKS, leakFragments, REPLAY_AGE_MS, thrownErrorSources } from '../fixtures/hostile.js'
import { lambdaEvent, lambdaEventKinds, resultHeader } from '../fixtures/lambda-events.js'
import { chunk, rawPost } from '../fixtures/requests.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

const SLOW_CLIENTS = 12

describe.each(adapterApps)('$name adapter under hostile input', ({ makeApp }) => {
  async function start(options: Parameters<typeof testWebhooks>[0] = {}) {
    const { webhooks, errors } = testWebhooks(options)
    let runs = 0
    webhooks.onAny(() => void runs++)
    const served = await listen(await makeApp(webhooks))
    closers.push(served.close)
    return { webhooks, errors, server: served.server, url: `${served.url}/webhooks`, runs: () => runs }
  }

  it(`answers ${SLOW_CLIENTS} clients sending their body a byte at a time 408 at the deadline, and closes them`, async () => {
    const deadlineMs = 300
    const { errors, url, server, runs } = await start({ deadlineMs })
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const answers = await Promise.all(
      Array.from({ length: SLOW_CLIENTS }, (_, i) => {
        let next = 0
        // Half announce their length, half send chunks: neither ever finishes the body.
        const framed = i % 2 === 0
        const head = framed
          ? { ...headers, 'content-length': String(body.length) }
          : { ...headers, 'transfer-encoding': 'chunked' }
        return rawPost(
          url,
          head,
          () => {
            const byte = body[next++ % body.length] as string
            return framed ? byte : chunk(byte)
          },
          { intervalMs: 100 },
        )
      }),
    )

    for (const answer of answers) {
      expect(answer.status).toBe(408)
      expect(answer.headers.connection).toBe('close')
      expect(
        JSON.parse(
          answer.body
            .trim()
            .split('\r\n')
            .find((line) => line.startsWith('{')) ?? '{}',
        ),
      ).toEqual({
        error: 'body_timeout',
        message: 'request body not received within the deadline',
      })
      expect(answer.closedByServer).toBe(true)
      expect(answer.bytesSent).toBeLessThan(body.length) // answered while the body was still arriving
    }
    expect(errors.map((e) => e.code)).toEqual(Array(SLOW_CLIENTS).fill('body_timeout'))
    expect(runs()).toBe(0)
    // The server still answers everyone else.
    const ok = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    expect((await request(server).post('/webhooks').set(ok.headers).send(ok.body)).status).toBe(200)
  })

  it('answers 413 with connection: close, then closes, once a chunked body passes maxBodyBytes', async () => {
    const { errors, url, runs } = await start({ maxBodyBytes: 1024 })
    const { headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    let pieces = 0

    // Past the limit in one chunk, then nothing more: the client waits with its body unfinished.
    const answer = await rawPost(url, { ...headers, 'transfer-encoding': 'chunked' }, () =>
      pieces++ === 0 ? chunk(Buffer.alloc(4096, 'x')) : undefined,
    )

    expect(answer.status).toBe(413)
    expect(answer.headers.connection).toBe('close')
    expect(JSON.parse(answer.body.split('\r\n').find((line) => line.startsWith('{')) ?? '{}').error).toBe(
      'payload_too_large',
    )
    expect(answer.closedByServer).toBe(true)
    expect(errors.map((e) => e.code)).toEqual(['payload_too_large'])
    expect(runs()).toBe(0)
  })

  it('stops reading a chunked flood once it passes maxBodyBytes and drops the connection', async () => {
    const { errors, url, runs } = await start({ maxBodyBytes: 1024 })
    const { headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const piece = chunk(Buffer.alloc(64 * 1024, 'x'))
    const cap = 64 * 1024 * 1024

    // As fast as the socket takes it. (The 413 itself is usually lost to such a client: the server closes a socket
    // with unread bytes in it, which resets the connection. Nothing is lost: 413 is no 2XX either.)
    const answer = await rawPost(url, { ...headers, 'transfer-encoding': 'chunked' }, (sent) =>
      sent < cap ? piece : undefined,
    )

    expect(answer.closedByServer).toBe(true)
    // What the two kernels' socket buffers hold, not the flood.
    expect(answer.bytesSent).toBeLessThan(16 * 1024 * 1024)
    expect(errors.map((e) => e.code)).toEqual(['payload_too_large'])
    expect(runs()).toBe(0)
  })

  describe.each(thrownErrorSources)('a $name that throws', (source) => {
    it(`answers ${source.status} ${source.code} with the fixed sentence, and gives onError the thrown error`, async () => {
      const { webhooks, errors, server } = await start(source.options)
      if (source.handler) webhooks.on('transaction_settled', source.handler)
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

      const res = await request(server).post('/webhooks').set(headers).send(body)

      expect(res.status).toBe(source.status)
      expect(res.body).toEqual({ error: source.code, message: source.message })
      for (const fragment of leakFragments(LEAKS[source.name])) expect(res.text).not.toContain(fragment)
      expect(errors).toHaveLength(1)
      expect(errors[0]?.code).toBe(source.code)
      expect(errors[0]?.message).toContain(LEAKS[source.name])
      expect((errors[0]?.cause as Error | undefined)?.message).toBe(LEAKS[source.name])
    })
  })

  it('answers a signed event older than maxEventAgeMs and not handled before 422 stale_event without running handlers, and reports it', async () => {
    const { errors, server, runs } = await start()
    const replay = await eventAged(REPLAY_AGE_MS)
    const fresh = await eventAged(60_000)

    const res = await request(server).post('/webhooks').set(replay.headers).send(replay.body)
    const ok = await request(server).post('/webhooks').set(fresh.headers).send(fresh.body)

    expect(res.status).toBe(422)
    expect(res.body).toEqual({
      error: 'stale_event',
      message: 'event older than this receiver accepts and not handled before; not acknowledged',
    })
    expect(ok.body.status).toBe('processed')
    expect(runs()).toBe(1)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(StaleEventError)
    expect((errors[0] as StaleEventError).event.event_id).toBe(replay.event.event_id)
  })

  it('verifies a body with a byte order mark and non-ASCII letters over the bytes as sent', async () => {
    const { webhooks, url, errors } = await start()
    const seen: unknown[] = []
    webhooks.on('transaction_settled', (event) => void seen.push(event.data.transaction_description))
    const { event, bytes, headers } = await bomDelivery()

    const res = await fetch(url, { method: 'POST', body: bytes, headers })

    expect(errors).toEqual([])
    expect(res.status).toBe(200)
    expect(seen).toEqual([(event.data as { transaction_description: string }).transaction_description])
  })
})

describe.each(lambdaEventKinds)('lambda adapter under hostile input, $name events', ({ kind }) => {
  function start(options: Parameters<typeof testWebhooks>[0] = {}) {
    const { webhooks, errors } = testWebhooks(options)
    let runs = 0
    webhooks.onAny(() => void runs++)
    const handler = lambdaWebhooks(webhooks)
    const post = (body: string | Uint8Array, headers: Record<string, string>, base64?: boolean) =>
      handler(lambdaEvent(kind, { method: 'POST', headers, body, base64 }))
    return { webhooks, errors, post, runs: () => runs }
  }

  describe.each(thrownErrorSources)('a $name that throws', (source) => {
    it(`answers ${source.status} ${source.code} with the fixed sentence, and gives onError the thrown error`, async () => {
      const { webhooks, errors, post } = start(source.options)
      if (source.handler) webhooks.on('transaction_settled', source.handler)
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

      const res = await post(body, headers)

      expect(res.statusCode).toBe(source.status)
      expect(JSON.parse(res.body)).toEqual({ error: source.code, message: source.message })
      for (const fragment of leakFragments(LEAKS[source.name])) expect(res.body).not.toContain(fragment)
      expect((errors[0]?.cause as Error | undefined)?.message).toBe(LEAKS[source.name])
    })
  })

  it('answers an old event not handled before 422 stale_event without running handlers', async () => {
    const { errors, post, runs } = start()
    const replay = await eventAged(REPLAY_AGE_MS)

    const res = await post(replay.body, replay.headers)

    expect(res.statusCode).toBe(422)
    expect(JSON.parse(res.body).error).toBe('stale_event')
    expect(runs()).toBe(0)
    expect(errors[0]).toBeInstanceOf(StaleEventError)
  })

  it('verifies a base64 body with a byte order mark and non-ASCII letters over its bytes', async () => {
    const { errors, post, runs } = start()
    const { bytes, headers } = await bomDelivery()

    const res = await post(bytes, headers, true)

    expect(errors).toEqual([])
    expect(res.statusCode).toBe(200)
    expect(runs()).toBe(1)
  })

  it('leaves the connection to the AWS front end: no connection header on a 413', async () => {
    const { post } = start({ maxBodyBytes: 64 })
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const res = await post(body, headers)

    expect(res.statusCode).toBe(413)
    expect(resultHeader(res, 'content-type')).toMatch(/^application\/json/)
    expect(resultHeader(res, 'connection')).toBeUndefined()
  })
})

/** One request over a cleartext HTTP/2 connection: status, headers and body. */
function h2Request(
  url: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url)
    session.on('error', reject)
    const stream = session.request({ ':path': '/webhooks', ...headers })
    let text = ''
    let head: Record<string, unknown> = {}
    stream.setEncoding('utf8')
    stream.on('response', (h) => {
      head = h
    })
    stream.on('data', (chunk: string) => {
      text += chunk
    })
    stream.on('close', () => {
      session.close()
      resolve({ status: Number(head[':status'] ?? 0), headers: head, body: text })
    })
    stream.on('error', () => {})
    if (body === undefined) stream.end()
    else stream.write(body) // left unfinished: the answer comes without the rest
  })
}

const h2Servers: { name: string; start(webhooks: TestWebhooks): Promise<{ url: string; close(): Promise<void> }> }[] = [
  {
    name: 'koa',
    async start(webhooks) {
      const app = new Koa()
      const router = new Router()
      router.all('/webhooks', koaWebhooks(webhooks))
      app.use(router.routes())
      return listenH2(http2.createServer(app.callback()))
    },
  },
  {
    name: 'hono on @hono/node-server',
    async start(webhooks) {
      const app = new Hono()
      app.all('/webhooks', honoWebhooks(webhooks))
      return listenH2(http2.createServer(getRequestListener(app.fetch)))
    },
  },
  {
    name: 'fastify',
    async start(webhooks) {
      const app = Fastify({ http2: true })
      await app.register(fastifyWebhooks, { webhooks, path: '/webhooks' })
      const url = await app.listen({ port: 0, host: '127.0.0.1' })
      return { url, close: () => app.close() }
    },
  },
]

async function listenH2(server: http2.Http2Server) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

describe.each(h2Servers)('$name over HTTP/2', ({ start }) => {
  it('answers 405 and 413 all the same: the HTTP/1 connection header they carry never reaches the client', async () => {
    // Node drops a connection header set on an HTTP/2 answer with an UnsupportedWarning: it must not be set at all.
    const warnings: string[] = []
    const onWarning = (warning: Error) => void warnings.push(`${warning.name}: ${warning.message}`)
    process.on('warning', onWarning)
    closers.push(async () => void process.off('warning', onWarning))
    const { webhooks, errors } = testWebhooks({ maxBodyBytes: 1024 })
    const served = await start(webhooks)
    closers.push(served.close)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const empty = await h2Request(served.url, { ':method': 'POST', ...headers })
    const put = await h2Request(served.url, { ':method': 'PUT' })
    const big = await h2Request(served.url, { ':method': 'POST', ...headers, 'content-length': '100000' }, body)

    expect(empty.status).toBe(401) // an empty body does not match the signature
    expect(put.status).toBe(405)
    expect(put.headers.allow).toBe('POST')
    expect(big.status).toBe(413)
    expect(JSON.parse(big.body).error).toBe('payload_too_large')
    for (const answer of [put, big]) expect(answer.headers.connection).toBeUndefined()
    expect(errors.map((e) => e.code)).toEqual(['invalid_signature', 'method_not_allowed', 'payload_too_large'])
    await new Promise((resolve) => setImmediate(resolve))
    expect(warnings).toEqual([])
  })
})
