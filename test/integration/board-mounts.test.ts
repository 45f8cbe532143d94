// Each mount of @payhooks/board on a real server: the page (redirected to its trailing slash), its module, the
// API, a replay with the page's token, a cross-site POST and an unauthorized request refused, and the app's own
// routes beside it untouched.
import { createServer, type IncomingMessage, type RequestListener } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import { type Board, createBoard, MAX_BODY_BYTES } from '@payhooks/board'
import { expressBoard } from '@payhooks/board/express'
import { fastifyBoard } from '@payhooks/board/fastify'
import { honoBoard } from '@payhooks/board/hono'
import { koaBoard } from '@payhooks/board/koa'
import { nodeBoard } from '@payhooks/board/node'
import { memoryDeadLetterStore } from '@payhooks/core'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { afterAll, describe, expect, it } from 'vitest'
import { listen } from '../fixtures/apps.js'
import { boardReceiver, parkSigned } from '../fixtures/board.js'

const BASE = '/admin/payhooks'
const closers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closers) await close()
})

type Header = (name: string) => string | undefined
const allowed = (header: Header) => header('x-ops') === 'yes'

async function fastifyListener(board: Board<never>): Promise<RequestListener> {
  let listener: RequestListener | undefined
  const app = Fastify({
    serverFactory(handler) {
      listener = handler
      return createServer(handler)
    },
  })
  app.get('/elsewhere', async () => 'app')
  await app.register(fastifyBoard(board), { prefix: BASE })
  await app.ready()
  return listener as RequestListener
}

const mounts: {
  name: string
  listener: (make: (header: (request: never) => Header) => Board<never>) => Promise<RequestListener>
}[] = [
  {
    name: 'express (after express.json())',
    async listener(make) {
      const app = express()
      app.use(express.json())
      app.use(BASE, expressBoard(make((req: express.Request) => (name) => req.get(name)) as Board<express.Request>))
      app.get('/elsewhere', (_req, res) => {
        res.send('app')
      })
      return app as unknown as RequestListener
    },
  },
  {
    name: 'node:http',
    async listener(make) {
      const serve = nodeBoard(
        make((req: IncomingMessage) => (name) => req.headers[name] as string | undefined) as Board<IncomingMessage>,
        { path: BASE },
      )
      return (req, res) => {
        if (serve(req, res)) return
        res.end('app')
      }
    },
  },
  {
    name: 'hono',
    async listener(make) {
      const app = new Hono()
      const serve = honoBoard(
        make((c: import('hono').Context) => (name) => c.req.header(name)) as Board<import('hono').Context>,
        { path: BASE },
      )
      app.all(BASE, serve)
      app.all(`${BASE}/*`, serve)
      app.get('/elsewhere', (c) => c.text('app'))
      return getRequestListener(app.fetch)
    },
  },
  {
    name: 'koa',
    async listener(make) {
      const app = new Koa()
      app.use(
        koaBoard(make((ctx: Koa.Context) => (name) => ctx.get(name) || undefined) as Board<Koa.Context>, {
          path: BASE,
        }),
      )
      app.use((ctx) => {
        ctx.body = 'app'
      })
      return app.callback()
    },
  },
  {
    name: 'fastify',
    listener: (make) =>
      fastifyListener(
        make((request: import('fastify').FastifyRequest) => (name) => request.headers[name] as string | undefined),
      ),
  },
]

describe.each(mounts)('board mounted on $name', ({ listener }) => {
  it('serves the page and API behind authorize, replays once with the token, refuses a cross-site POST', async () => {
    const deadLetters = memoryDeadLetterStore()
    const { webhooks, runs } = boardReceiver(deadLetters)
    await parkSigned(deadLetters, 'evt_mount')
    const make = (header: (request: never) => Header) =>
      createBoard<never>({
        webhooks,
        authorize: (request) => allowed(header(request)),
        logger: { warn() {}, info() {} },
      })
    const served = await listen(await listener(make))
    closers.push(served.close)
    const url = `${served.url}${BASE}`
    const ops = { 'x-ops': 'yes' }

    const bare = await fetch(url, { headers: ops, redirect: 'manual' })
    expect(bare.status).toBe(308)
    expect(bare.headers.get('location')).toBe(`${BASE}/`)
    const page = await fetch(`${url}/`, { headers: ops })
    expect(page.status).toBe(200)
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    const html = await page.text()
    const token = /name="payhooks-board-csrf" content="([^"]+)"/.exec(html)?.[1] ?? ''
    const cookie = (page.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
    expect(cookie).toBe(`payhooks_board_csrf=${token}`)
    const script = await fetch(`${url}/assets/app.js`, { headers: ops })
    expect(script.headers.get('content-type')).toContain('javascript')
    expect(await script.text()).toContain('import')

    const list = (await (await fetch(`${url}/api/dead-letters?code=handler_failed`, { headers: ops })).json()) as {
      letters: { eventId: string }[]
    }
    expect(list.letters.map((letter) => letter.eventId)).toEqual(['evt_mount'])
    expect((await fetch(`${url}/api/dead-letters`)).status).toBe(403)

    const host = new URL(served.url).host
    const replay = (origin: string) =>
      fetch(`${url}/api/dead-letters/replay`, {
        method: 'POST',
        headers: { ...ops, origin, cookie, 'content-type': 'application/json', 'x-payhooks-board-csrf': token },
        body: JSON.stringify({ eventIds: ['evt_mount'] }),
      })
    const crossSite = await replay('https://evil.example')
    expect(crossSite.status).toBe(403)
    // The whole origin is compared: the board's host over https (it is served over http here) is another origin.
    expect((await replay(`https://${host}`)).status).toBe(403)
    // HEAD goes through authorize as GET does.
    expect((await fetch(`${url}/`, { method: 'HEAD' })).status).toBe(403)
    expect((await fetch(`${url}/api/dead-letters`, { method: 'HEAD' })).status).toBe(403)
    const head = await fetch(`${url}/`, { method: 'HEAD', headers: ops })
    expect([head.status, await head.text()]).toEqual([200, ''])
    // A body over the board's limit: refused by authorize first, then 413 with the board's headers.
    const large = JSON.stringify({ eventIds: ['evt_mount'], pad: 'x'.repeat(MAX_BODY_BYTES) })
    const post = (headers: Record<string, string>) =>
      fetch(`${url}/api/dead-letters/replay`, { method: 'POST', headers, body: large })
    const csrf = {
      origin: `http://${host}`,
      cookie,
      'content-type': 'application/json',
      'x-payhooks-board-csrf': token,
    }
    expect((await post(csrf)).status).toBe(403)
    const tooLarge = await post({ ...ops, ...csrf })
    expect(tooLarge.status).toBe(413)
    expect(tooLarge.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
    expect(await tooLarge.json()).toEqual({ error: `body over ${MAX_BODY_BYTES} bytes` })
    const form = await fetch(`${url}/api/dead-letters/replay`, {
      method: 'POST',
      headers: { ...ops, origin: `http://${host}`, cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'eventIds=evt_mount',
    })
    expect(form.status).toBe(403)
    expect(runs.size).toBe(0)
    const first = (await (await replay(`http://${host}`)).json()) as { outcomes: { status: string }[] }
    expect(first.outcomes[0]?.status).toBe('processed')
    const second = (await (await replay(`http://${host}`)).json()) as { outcomes: { status: string }[] }
    expect(second.outcomes[0]?.status).toBe('duplicate')
    expect(runs.get('evt_mount')).toBe(1)

    expect(await (await fetch(`${served.url}/elsewhere`)).text()).toBe('app')
  })
})
