// nodeWebhooks on a real node:http server on loopback, over real connections: how its answers are framed, what it
// does with a body an earlier layer read, and that a client gone before the answer harms nothing. The scenarios
// every adapter shares run against it too (adapters.test.ts and adapters-hostile.test.ts, as `node:http`).
import { Agent, type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from 'node:http'
import { InternalError, RawBodyUnavailableError, type TransactionSettledEvent } from '@payhooks/core'
import { type NodeWebhooksOptions, nodeWebhooks } from '@payhooks/core/node'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { deferred, listen, SECRET, testWebhooks } from '../fixtures/apps.js'
import { postUnfinished } from '../fixtures/requests.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

type Listener = (req: IncomingMessage, res: ServerResponse) => void

async function start(
  options: Parameters<typeof testWebhooks>[0] = {},
  mount: (webhooks: ReturnType<typeof testWebhooks>['webhooks']) => Listener = (webhooks) => nodeWebhooks(webhooks),
) {
  const { webhooks, errors } = testWebhooks(options)
  const handled: TransactionSettledEvent[] = []
  webhooks.on('transaction_settled', (event) => void handled.push(event))
  const served = await listen(mount(webhooks))
  closers.push(served.close)
  return { webhooks, errors, handled, url: `${served.url}/webhooks` }
}

interface Answer {
  status: number
  headers: IncomingHttpHeaders
  body: string
  /** True when the request went out on a connection an earlier request had used. */
  reusedSocket: boolean
  /** Resolves once the connection closed. */
  closed: Promise<void>
}

/**
 * One request with node:http's client, on `agent` (a fresh connection when none). With `unfinished`, the body is
 * written and never ended: an answer then came without the rest.
 */
function send(
  url: string,
  {
    method = 'POST',
    headers = {},
    body,
    agent,
    unfinished = false,
  }: { method?: string; headers?: Record<string, string>; body?: string; agent?: Agent; unfinished?: boolean },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: agent ?? false })
    req.on('error', reject)
    req.on('response', (res) => {
      const closed = new Promise<void>((done) => res.socket.once('close', () => done()))
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        text += chunk
      })
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: text,
          reusedSocket: req.reusedSocket,
          closed,
        }),
      )
    })
    if (unfinished) req.write(body ?? '')
    else req.end(body)
  })
}

describe('nodeWebhooks on node:http', () => {
  it('answers 200 with a content-length, not chunked, and keeps the connection for the next delivery', async () => {
    const { url, handled } = await start()
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    closers.push(async () => agent.destroy())
    const first = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const second = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const answers = [
      await send(url, { headers: first.headers, body: first.body, agent }),
      await send(url, { headers: second.headers, body: second.body, agent }),
    ]

    for (const answer of answers) {
      expect(answer.status).toBe(200)
      expect(answer.headers['content-type']).toMatch(/^application\/json/)
      expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(answer.body)))
      expect(answer.headers['transfer-encoding']).toBeUndefined()
      expect(answer.headers.connection).toBe('keep-alive')
      expect(JSON.parse(answer.body).status).toBe('processed')
    }
    expect(answers.map((a) => a.reusedSocket)).toEqual([false, true])
    expect(handled).toHaveLength(2)
  })

  it('answers GET 405 with allow: POST and runs nothing', async () => {
    const { url, handled, errors } = await start()

    const answer = await send(url, { method: 'GET' })

    expect(answer.status).toBe(405)
    expect(answer.headers.allow).toBe('POST')
    expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(answer.body)))
    expect(JSON.parse(answer.body).error).toBe('method_not_allowed')
    expect(handled).toEqual([])
    expect(errors.map((e) => e.code)).toEqual(['method_not_allowed'])
  })

  it('answers a body over maxBodyBytes 413 with connection: close, from its content-length before it is sent', async () => {
    const { url, handled } = await start({ maxBodyBytes: 1024 })
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const answer = await send(url, {
      headers: { ...headers, 'content-length': String(10 * 1024 * 1024) },
      body: body.slice(0, 100),
      unfinished: true,
    })

    expect(answer.status).toBe(413)
    expect(answer.headers.connection).toBe('close')
    expect(JSON.parse(answer.body).error).toBe('payload_too_large')
    expect(handled).toEqual([])
    await answer.closed
  })

  it('answers a chunked body 413 once it passes maxBodyBytes', async () => {
    const { url, handled } = await start({ maxBodyBytes: 1024 })
    const event = sampleEvent('transaction_settled', { data: { transaction_description: 'x'.repeat(4096) } })
    const { body, headers } = await signedDelivery(event, SECRET)

    const answer = await postUnfinished(url, headers, body)

    expect(answer.status).toBe(413)
    expect(JSON.parse(answer.body).error).toBe('payload_too_large')
    expect(handled).toEqual([])
  })

  describe('behind a layer that read the body', () => {
    /** The bytes the earlier layer kept, per request. */
    const kept = new WeakMap<IncomingMessage, Buffer>()
    /** Reads the whole body first, as a body parser does, keeping its exact bytes. */
    const readFirst =
      (options: NodeWebhooksOptions) =>
      (webhooks: ReturnType<typeof testWebhooks>['webhooks']): Listener => {
        const listener = nodeWebhooks(webhooks, options)
        return (req, res) => {
          const chunks: Buffer[] = []
          req.on('data', (chunk: Buffer) => chunks.push(chunk))
          req.on('end', () => {
            kept.set(req, Buffer.concat(chunks))
            listener(req, res)
          })
        }
      }
    const rawBody = (req: IncomingMessage) => kept.get(req)

    it('verifies the bytes handed over with the rawBody option and answers 200', async () => {
      const { url, handled } = await start({}, readFirst({ rawBody }))
      // Pretty-printed: a receiver that re-serialized parsed JSON would compute another signature.
      const event = sampleEvent('transaction_settled')
      const { body, headers } = await signedDelivery(JSON.stringify(event, null, 2), SECRET)

      const answer = await send(url, { headers, body })

      expect(answer.status).toBe(200)
      expect(handled.map((e) => e.event_id)).toEqual([event.event_id])
    })

    it('answers 500 raw_body_unavailable, saying how to fix it, without the option, and runs nothing', async () => {
      const { url, handled, errors } = await start({}, readFirst({}))
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

      const answer = await send(url, { headers, body })

      expect(answer.status).toBe(500)
      expect(JSON.parse(answer.body).error).toBe('raw_body_unavailable')
      expect(JSON.parse(answer.body).message).toContain('rawBody option')
      expect(handled).toEqual([])
      expect(errors).toHaveLength(1)
      expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError)
      expect(errors[0]?.message).toContain('rawBody option')
    })
  })

  it('answers 500 internal_error when the rawBody option throws, reports it, and serves the next request', async () => {
    let calls = 0
    const { url, handled, errors } = await start({}, (webhooks) =>
      nodeWebhooks(webhooks, {
        rawBody: () => {
          if (++calls === 1) throw new Error('req.rawBody read before it was set')
          return undefined
        },
      }),
    )
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const failed = await send(url, { headers, body })
    const next = await send(url, { headers, body })

    expect(failed.status).toBe(500)
    expect(JSON.parse(failed.body)).toEqual({ error: 'internal_error', message: 'internal error' })
    expect(errors.map((e) => e.constructor)).toEqual([InternalError])
    expect(errors[0]?.message).toContain('req.rawBody read before it was set')
    expect(next.status).toBe(200)
    expect(handled).toHaveLength(1)
  })

  it('stays up when the client leaves before its answer, and answers the next delivery', async () => {
    // The answer waits for the handler (no deadline answers first), so it is written after the client left however
    // long a loaded machine takes to see the handler run.
    const { url, webhooks, handled, errors } = await start({ deadlineMs: 9000 })
    const release = deferred()
    const left = deferred()
    let runs = 0
    webhooks.on('transaction_returned', async () => {
      runs++
      await release.promise
    })
    const refund = await signedDelivery(sampleEvent('transaction_returned'), SECRET)
    const req = request(url, { method: 'POST', headers: refund.headers, agent: false })
    req.on('error', () => {})
    req.on('close', () => left.resolve())
    req.end(refund.body)
    await expect.poll(() => runs, { timeout: 10_000, interval: 20 }).toBe(1)
    req.destroy()
    await left.promise
    release.resolve()

    const next = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const answer = await send(url, { headers: next.headers, body: next.body })

    expect(answer.status).toBe(200)
    expect(handled).toHaveLength(1)
    // An answer written after the client left is no failure of the receiver's.
    expect(errors.filter((e) => e.code === 'internal_error')).toEqual([])
  })
})
