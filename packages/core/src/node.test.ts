// The Node adapters' side (@payhooks/core/node): the body read by callback inside receiveNodeRequest, the answer by
// callback from answerNodeRequest, and writeNodeAnswer. nodeWebhooks over real HTTP: test/integration/node-http.test.ts.
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { InternalError, type WebhookError } from './errors/index.js'
import { answerNodeRequest, type NodeReceiver, readNodeBody, receiveNodeRequest, writeNodeAnswer } from './node.js'
import { createWebhooks } from './receiver/create.js'
import type { WebhookResult } from './types.js'

const SECRET = 'whsec_node_body'
/** A signature header that verifies nothing: enough to have the body read (an unsigned POST is refused unread). */
const SIGNED = { 'service-hmac-sha256': 'A'.repeat(64) }

/** A request stream standing for an `IncomingMessage`: headers, method, and the body written to it. */
function request(headers: Record<string, string>): PassThrough & IncomingMessage {
  const stream = new PassThrough() as PassThrough & IncomingMessage
  Object.assign(stream, { method: 'POST', headers, complete: false })
  return stream
}

describe('receiveNodeRequest', () => {
  it("runs a delivery inside the stream's 'end': no promise between the last byte and the handlers", async () => {
    const webhooks = createWebhooks({ secret: SECRET, logger: { error() {} } })
    const handled: string[] = []
    webhooks.on('transaction_settled', (event) => {
      handled.push(event.event_id)
    })
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: 'evt_cb' }), SECRET)
    const req = request(headers as Record<string, string>)
    const answer = receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
    const atEnd: string[][] = []
    req.on('end', () => atEnd.push([...handled]))
    req.end(body)
    expect((await answer).status).toBe(200)
    expect(atEnd).toEqual([['evt_cb']])
  })

  it('answers 413 once more than maxBodyBytes arrived, and stops reading', async () => {
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: 10, logger: { error() {} } })
    const req = request(SIGNED)
    const answer = receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
    req.write(Buffer.alloc(11))
    expect((await answer).status).toBe(413)
    expect(req.isPaused()).toBe(true)
  })

  it('answers 400 when the connection closes before the body ended', async () => {
    const webhooks = createWebhooks({ secret: SECRET, logger: { error() {} } })
    const req = request(SIGNED)
    const answer = receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
    req.write('{"event_id":')
    req.destroy()
    const { status, body } = await answer
    expect([status, JSON.parse(body).error]).toEqual([400, 'incomplete_body'])
  })
})

describe('answerNodeRequest', () => {
  const FIX = { fix: 'read no body before this' }

  it('answers through receive when the receiver object has no respond', async () => {
    const webhooks = createWebhooks({ secret: SECRET, logger: { error() {} } })
    const handled: string[] = []
    webhooks.on('transaction_settled', (event) => void handled.push(event.event_id))
    // A receiver as a wrapper may pass it on: the three members of NodeReceiver, and no respond.
    const wrapper: NodeReceiver = {
      receive: (delivery) => webhooks.receive(delivery),
      reject: (error) => webhooks.reject(error),
      maxBodyBytes: webhooks.maxBodyBytes,
    }
    const { body, headers } = await signedDelivery(
      sampleEvent('transaction_settled', { eventId: 'evt_wrapped' }),
      SECRET,
    )
    const req = request(headers as Record<string, string>)
    const sent: WebhookResult[] = []

    answerNodeRequest(wrapper, req, FIX, (result) => void sent.push(result))
    req.end(body)

    await expect.poll(() => sent.length).toBe(1)
    expect(JSON.parse(sent[0]?.body ?? '{}')).toEqual({ ok: true, event_id: 'evt_wrapped', status: 'processed' })
    expect(handled).toEqual(['evt_wrapped'])
  })

  it('reports a send that throws, whichever way the answer came, and never throws itself', async () => {
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret: SECRET, maxBodyBytes: 10 })
    webhooks.onError((error) => void errors.push(error))
    const wrapper: NodeReceiver = {
      receive: (delivery) => webhooks.receive(delivery),
      reject: (error) => webhooks.reject(error),
      maxBodyBytes: webhooks.maxBodyBytes,
    }
    const calls: number[] = []
    const send = (result: WebhookResult) => {
      calls.push(result.status)
      throw new Error('socket gone')
    }

    // Known before any work (413 from content-length), through respond, and through receive's promise.
    expect(() => answerNodeRequest(webhooks, request({ ...SIGNED, 'content-length': '11' }), FIX, send)).not.toThrow()
    expect(() => answerNodeRequest(webhooks, Object.assign(request({}), { method: 'GET' }), FIX, send)).not.toThrow()
    expect(() => answerNodeRequest(wrapper, Object.assign(request({}), { method: 'GET' }), FIX, send)).not.toThrow()

    await expect.poll(() => calls.length).toBe(3)
    expect(calls).toEqual([413, 405, 405])
    const internal = errors.filter((e) => e instanceof InternalError)
    expect(internal.map((e) => e.cause)).toEqual([0, 1, 2].map(() => new Error('socket gone')))
  })

  it('answers 500 internal_error, and reports it, when a receiver without respond rejects', async () => {
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret: SECRET })
    webhooks.onError((error) => void errors.push(error))
    const broken = new Error('wrapper broke')
    const wrapper: NodeReceiver = {
      receive: () => Promise.reject(broken),
      reject: (error) => webhooks.reject(error),
      maxBodyBytes: webhooks.maxBodyBytes,
    }
    const sent: WebhookResult[] = []

    answerNodeRequest(wrapper, Object.assign(request({}), { method: 'GET' }), FIX, (result) => void sent.push(result))

    await expect.poll(() => sent.length).toBe(1)
    expect([sent[0]?.status, JSON.parse(sent[0]?.body ?? '{}').error]).toEqual([500, 'internal_error'])
    expect(errors.map((error) => error.cause)).toEqual([broken])
  })
})

describe('writeNodeAnswer', () => {
  it('writes nothing when an answer already went out on the response', async () => {
    const attempts: unknown[] = []
    const server = createServer((_req, res) => {
      res.writeHead(202, { 'content-type': 'text/plain', 'x-first': 'yes' })
      res.write('first answer')
      try {
        writeNodeAnswer(res, { status: 500, headers: { 'x-second': 'yes' }, body: 'second answer' })
      } catch (error) {
        attempts.push(error)
      }
      res.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const { port } = server.address() as AddressInfo
      const answer = await new Promise<{ status?: number; headers: Record<string, unknown>; body: string }>(
        (resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', agent: false }, (res) => {
            let body = ''
            res.setEncoding('utf8')
            res.on('data', (chunk: string) => {
              body += chunk
            })
            res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }))
          })
          req.on('error', reject)
          req.end()
        },
      )
      expect(answer.status).toBe(202)
      expect(answer.headers['x-first']).toBe('yes')
      expect(answer.headers['x-second']).toBeUndefined()
      expect(answer.body).toBe('first answer')
      expect(attempts).toEqual([])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('readNodeBody', () => {
  it('resolves with the exact bytes, in one buffer', async () => {
    const stream = new PassThrough()
    const read = readNodeBody(stream, 100)
    stream.write(Buffer.from([0xef, 0xbb]))
    stream.end(Buffer.from([0xbf, 0x7b, 0x7d]))
    expect([...(await read.body)]).toEqual([0xef, 0xbb, 0xbf, 0x7b, 0x7d])
  })

  it('resolves with what arrived once stopped', async () => {
    const stream = new PassThrough()
    const read = readNodeBody(stream, 100)
    read.stop()
    expect((await read.body).byteLength).toBe(0)
    expect(stream.isPaused()).toBe(true)
  })
})
