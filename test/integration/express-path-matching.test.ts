// The middleware form (`app.use(expressWebhooks(webhooks, { path }))`) answers exactly the requests Express's own
// `app.all(path)` would: side by side on real Express 5 and 4 apps, sent raw request targets (supertest would
// normalize them), under each of Express's routing settings.
import { connect } from 'node:net'
import { expressWebhooks } from '@payhooks/express'
import type express from 'express'
import { afterEach, describe, expect, it } from 'vitest'
import { expressVersions, listen, testWebhooks } from '../fixtures/apps.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

/** The status of a GET with this exact request target, read off the raw status line. */
function statusOf(port: number, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk) => (text += chunk))
    socket.on('error', reject)
    socket.on('close', () => resolve(Number(text.slice(9, 12))))
    socket.end(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`)
  })
}

/** The webhook path answers GET with 405 in both forms; anything else reaches the catch-all, 418. */
async function serve(
  createApp: (typeof expressVersions)[number]['express'],
  settings: string[],
  mount: (app: express.Express, webhooks: ReturnType<typeof testWebhooks>['webhooks']) => void,
) {
  const { webhooks } = testWebhooks()
  const app = createApp()
  for (const setting of settings) app.enable(setting)
  mount(app, webhooks)
  app.use((_req, res) => {
    res.status(418).end()
  })
  const served = await listen(app)
  closers.push(served.close)
  return (served.server.address() as { port: number }).port
}

const targets = [
  '/webhooks',
  '/webhooks/',
  '/webhooks?x=1',
  '/WEBHOOKS',
  '/WebHooks/',
  '/webhooks#x',
  '/webhooks?x#y',
  '/WEBHOOKS#frag',
  'http://127.0.0.1/webhooks',
  'http://127.0.0.1/WEBHOOKS?q=1',
  'http://127.0.0.1/webhooks/',
  '/webhooks//',
  '/webhooks/x',
  '/webhooksx',
  '/web%68ooks',
  '/webhooks%2F',
  '//webhooks',
  '/webhooks;a',
  '/webhooks.',
]

describe.each(expressVersions)('$name: the middleware path matches as app.all does', ({ express }) => {
  it.each([
    ['default routing', []],
    ['case sensitive routing', ['case sensitive routing']],
    ['strict routing', ['strict routing']],
    ['both', ['case sensitive routing', 'strict routing']],
  ])('%s', async (_name, settings) => {
    const middleware = await serve(express, settings, (app, webhooks) => {
      app.use(expressWebhooks(webhooks, { path: '/webhooks' }))
    })
    const route = await serve(express, settings, (app, webhooks) => {
      app.all('/webhooks', expressWebhooks(webhooks))
    })

    const byMiddleware = await Promise.all(targets.map((target) => statusOf(middleware, target)))
    const byRoute = await Promise.all(targets.map((target) => statusOf(route, target)))

    expect(Object.fromEntries(targets.map((t, i) => [t, byMiddleware[i]]))).toEqual(
      Object.fromEntries(targets.map((t, i) => [t, byRoute[i]])),
    )
    expect(byRoute[targets.indexOf('/webhooks')]).toBe(405)
    expect(byRoute[targets.indexOf('/webhooksx')]).toBe(418)
  })

  it('answers the targets a catch-all after it would otherwise acknowledge', async () => {
    const port = await serve(express, [], (app, webhooks) => {
      app.use(expressWebhooks(webhooks, { path: '/webhooks' }))
    })

    for (const target of ['/WEBHOOKS', '/webhooks#x', 'http://127.0.0.1/webhooks']) {
      expect([target, await statusOf(port, target)]).toEqual([target, 405])
    }
  })

  it('compares after a mount path as app.all does with the whole path', async () => {
    const mounted = await serve(express, [], (app, webhooks) => {
      app.use('/payments', expressWebhooks(webhooks, { path: '/webhooks' }))
    })
    const route = await serve(express, [], (app, webhooks) => {
      app.all('/payments/webhooks', expressWebhooks(webhooks))
    })
    const paths = ['/payments/webhooks', '/PAYMENTS/Webhooks', 'http://127.0.0.1/payments/webhooks#x', '/webhooks']

    const byMount = await Promise.all(paths.map((target) => statusOf(mounted, target)))
    const byRoute = await Promise.all(paths.map((target) => statusOf(route, target)))

    expect(byMount).toEqual(byRoute)
    expect(byMount).toEqual([405, 405, 405, 418])
  })
})
