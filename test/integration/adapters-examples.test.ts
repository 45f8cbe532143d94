// The runnable examples: each app built by its createApp() handles every sample event, and `pnpm demo` passes.
import { execFile } from 'node:child_process'
import type { RequestListener } from 'node:http'
import { resolve } from 'node:path'
import { promisify } from 'node:util'
import { getRequestListener } from '@hono/node-server'
import { createWebhooks } from '@payhooks/core'
import { sampleEvent, sampleEventTypes, signedDelivery } from '@payhooks/testing'
import request from 'supertest'
import { afterEach, describe, expect, it } from 'vitest'
import { createApp as createExpressApp } from '../../examples/express/server.js'
import { createApp as createHonoApp } from '../../examples/hono/server.js'
import { createApp as createKoaApp } from '../../examples/koa/server.js'
import { listen } from '../fixtures/apps.js'
import { postUnfinished } from '../fixtures/requests.js'

const root = resolve(import.meta.dirname, '../..')
const secret = 'whsec_example_test'

const examples: { name: string; listener(log: (line: string) => void): RequestListener }[] = [
  { name: 'express', listener: (log) => createExpressApp({ secret, log }) },
  { name: 'koa', listener: (log) => createKoaApp({ secret, log }).callback() },
  { name: 'hono', listener: (log) => getRequestListener(createHonoApp({ secret, log }).fetch) },
]

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

describe.each(examples)('examples/$name', ({ listener }) => {
  it('prints what its handlers saw for every sample event, and rejects a bad signature', async () => {
    const lines: string[] = []
    const served = await listen(listener((line) => lines.push(line)))
    closers.push(served.close)
    const agent = request(served.server)

    for (const type of sampleEventTypes) {
      const event = sampleEvent(type)
      const { body, headers } = await signedDelivery(event, secret)
      const res = await agent.post('/webhooks').set(headers).send(body)
      expect(res.status).toBe(200)
      expect(lines.at(-1)).toContain(`${type} ${event.event_id}`)
    }
    const forged = await signedDelivery(sampleEvent('transaction_settled'), 'whsec_wrong')
    expect((await agent.post('/webhooks').set(forged.headers).send(forged.body)).status).toBe(401)
    expect(lines.at(-1)).toContain('invalid_signature')
  })
})

describe('examples/koa', () => {
  it('reads the webhook body under the deadline: a body still arriving is answered 408, not left to a body parser', async () => {
    const webhooks = createWebhooks({ secret, deadlineMs: 300 })
    const served = await listen(createKoaApp({ webhooks }).callback())
    closers.push(served.close)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
    const head = { ...headers, 'content-type': 'application/json', 'content-length': String(body.length) }

    const answer = await postUnfinished(`${served.url}/webhooks`, head, body.slice(0, 10))

    expect(answer.status).toBe(408)
    expect(JSON.parse(answer.body)).toEqual({
      error: 'body_timeout',
      message: 'request body not received within the deadline',
    })
    const other = await request(served.server).get('/webhooks')
    expect(other.status).toBe(405)
  })
})

describe('pnpm demo (examples/express/demo.js, against the built packages)', () => {
  it('exits 0 after printing each answer and what the handlers saw', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['examples/express/demo.js'], { cwd: root })
    for (const type of sampleEventTypes) expect(stdout).toContain(`handler: ${type} `)
    expect(stdout).toContain('"status":"duplicate"')
    expect(stdout).toContain('← 401')
    expect(stdout).toContain('All answers as expected.')
  })
})
