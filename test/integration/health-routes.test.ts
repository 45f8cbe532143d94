// The readiness route of each framework, mounted in one line on the real framework: 200 while the receiver is
// ready, 503 once drain() is called, and nothing else: no check's name, detail or latency.
import type { RequestListener } from 'node:http'
import { createServer } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import Router from '@koa/router'
import { createWebhooks, memoryStore, type WebhookStore } from '@payhooks/core'
import { nodeHealth } from '@payhooks/core/node'
import { expressHealth } from '@payhooks/express'
import { fastifyHealth } from '@payhooks/fastify'
import { honoHealth } from '@payhooks/hono'
import { koaHealth } from '@payhooks/koa'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import Koa from 'koa'
import { describe, expect, it } from 'vitest'
import { listen, SECRET } from '../fixtures/apps.js'

type Receiver = ReturnType<typeof createWebhooks>

const apps: { name: string; make(webhooks: Receiver): RequestListener | Promise<RequestListener> }[] = [
  {
    name: 'express',
    make(webhooks) {
      const app = express()
      app.get('/ready', expressHealth(webhooks))
      return app
    },
  },
  {
    name: 'koa',
    make(webhooks) {
      const app = new Koa()
      const router = new Router()
      router.get('/ready', koaHealth(webhooks))
      return app.use(router.routes()).callback()
    },
  },
  {
    name: 'hono',
    make(webhooks) {
      const app = new Hono()
      app.get('/ready', honoHealth(webhooks))
      return getRequestListener(app.fetch)
    },
  },
  {
    name: 'fastify',
    async make(webhooks) {
      let listener: RequestListener | undefined
      const app = Fastify({
        serverFactory(handler) {
          listener = handler
          return createServer(handler)
        },
      })
      app.get('/ready', fastifyHealth(webhooks))
      await app.ready()
      return listener as RequestListener
    },
  },
  { name: 'node:http', make: (webhooks) => nodeHealth(webhooks) },
]

describe.each(apps)('the readiness route on $name', ({ make }) => {
  it('answers 200 when ready, 503 when not, and nothing else (no check name, store kind or latency)', async () => {
    const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), checkAtStart: false })
    const server = await listen(await make(webhooks))
    try {
      const ready = await fetch(`${server.url}/ready`)
      expect(ready.status).toBe(200)
      expect(ready.headers.get('content-type')).toMatch(/^application\/json/)
      expect(await ready.json()).toEqual({ ready: true })
      webhooks.drain()
      const draining = await fetch(`${server.url}/ready`)
      expect(draining.status).toBe(503)
      expect(await draining.json()).toEqual({ ready: false })
    } finally {
      await server.close()
      await webhooks.close()
    }
  })

  it('answers 503 for a store that cannot be reached, naming neither it nor its address', async () => {
    const down: WebhookStore = { ...memoryStore(), health: () => Promise.reject(new Error('redis://:pw@host down')) }
    const webhooks = createWebhooks({ secret: SECRET, store: down, checkAtStart: false })
    const server = await listen(await make(webhooks))
    try {
      const response = await fetch(`${server.url}/ready`)
      expect(response.status).toBe(503)
      expect(await response.json()).toEqual({ ready: false })
    } finally {
      await server.close()
      await webhooks.close()
    }
  })
})
