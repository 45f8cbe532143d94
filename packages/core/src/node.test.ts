// The Node adapters' body read (@payhooks/core/node): delivered by callback inside receiveNodeRequest.
import type { IncomingMessage } from 'node:http'
import { PassThrough } from 'node:stream'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { readNodeBody, receiveNodeRequest } from './node.js'
import { createWebhooks } from './receiver/create.js'

const SECRET = 'whsec_node_body'

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
    const req = request({})
    const answer = receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
    req.write(Buffer.alloc(11))
    expect((await answer).status).toBe(413)
    expect(req.isPaused()).toBe(true)
  })

  it('answers 400 when the connection closes before the body ended', async () => {
    const webhooks = createWebhooks({ secret: SECRET, logger: { error() {} } })
    const req = request({})
    const answer = receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
    req.write('{"event_id":')
    req.destroy()
    const { status, body } = await answer
    expect([status, JSON.parse(body).error]).toEqual([400, 'incomplete_body'])
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
