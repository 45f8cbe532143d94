// Alerts against real services: store_memory on a redis-server of its own filled to maxmemory (noeviction), then
// given room; subscription against the sandbox's subscription API (inactive, another url, a type not subscribed);
// and the chat recipe of docs/guide/alerts.md posting them to a loopback receiver.
import { createClient } from '@payhooks/client'
import { type Alert, createWebhooks } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { createSandbox, type Sandbox } from '@payhooks/sandbox'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { postAlert } from '../fixtures/chat-alerts.js'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'
import { startReceiver } from '../fixtures/sandbox-receivers.js'

const SECRET = 'whsec_alerts_integration'
const RESELLER_KEY = '1001|alerts-test-key'
const quiet = { error() {}, warn() {} }
const waitLong = { timeout: 15_000, interval: 50 }

const usedMemory = async (node: Redis) => Number(/^used_memory:(\d+)/m.exec(await node.info('memory'))?.[1])

describe('store_memory on a Redis filled to maxmemory', () => {
  let server: OwnRedis
  let redis: Redis

  beforeAll(async () => {
    server = await ownRedis({ args: ['--maxmemory-policy', 'noeviction'] })
    await server.start()
    redis = new Redis(server.url)
  }, 120_000)

  afterAll(async () => {
    redis?.disconnect()
    await server?.dispose()
  })

  it('is raised (critical) while Redis is full, and resolved once it has room', async () => {
    const webhooks = createWebhooks({
      secret: SECRET,
      store: redisStore(redis, { ...UNHURRIED, keyPrefix: 'alerts-memory:' }),
      checkAtStart: false,
      logger: quiet,
      alerts: { storeMemory: { everyMs: 200 }, checkEveryMs: 100 },
    })
    webhooks.on('transaction_settled', () => {})
    const alerts: Alert[] = []
    webhooks.onAlert((alert) => alerts.push(alert))
    try {
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(alerts).toEqual([])

      // Full: maxmemory just above what it uses, junk until writes are refused, then below what it uses.
      await redis.config('SET', 'maxmemory', String((await usedMemory(redis)) + 1_048_576))
      const junk = 'x'.repeat(32_768)
      for (let i = 0, refused = 0; refused < 10; i++) {
        try {
          await redis.set(`junk:${i}`, junk)
        } catch (error) {
          expect(String(error)).toMatch(/OOM command not allowed/)
          refused++
        }
      }
      await redis.config('SET', 'maxmemory', String((await usedMemory(redis)) - 262_144))
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
      const refused = await webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
      expect(refused.status).toBe(503)

      await vi.waitFor(() => expect(alerts.map((a) => [a.name, a.firing])).toEqual([['store_memory', true]]), waitLong)
      expect(alerts[0]?.severity).toBe('critical')
      expect(alerts[0]?.message).toMatch(/^redis_memory: /)
      expect((await webhooks.health()).checks.find((check) => check.name === 'alert_store_memory')).toMatchObject({
        ok: false,
        severity: 'warning',
      })

      await redis.config('SET', 'maxmemory', '0')
      // The OOM refusal keeps the store's check failed for 10 s after it.
      await vi.waitFor(
        () =>
          expect(alerts.map((a) => [a.name, a.firing])).toEqual([
            ['store_memory', true],
            ['store_memory', false],
          ]),
        { timeout: 20_000, interval: 100 },
      )
    } finally {
      await webhooks.close()
    }
  }, 120_000)
})

describe('subscription against the sandbox subscription API', () => {
  let sandbox: Sandbox
  let baseUrl: string

  beforeAll(async () => {
    sandbox = createSandbox({ resellers: [{ key: RESELLER_KEY, merchantIds: [1234] }] })
    baseUrl = (await sandbox.listen()).url
  })

  afterAll(async () => {
    await sandbox?.close()
  })

  it('is raised when the subscription is inactive, points elsewhere, or lacks a handled type; resolved once fixed', async () => {
    const api = createClient({ baseUrl, auth: { resellerKey: RESELLER_KEY } }).forMerchant(1234)
    const url = 'http://127.0.0.1:9/webhooks'
    const input = { url, event_types: ['transaction_settled'], is_active: true }
    const { id } = await api.subscriptions.create(input)
    const webhooks = createWebhooks({
      secret: SECRET,
      checkAtStart: false,
      logger: quiet,
      alerts: { subscription: { client: api, id, url, everyMs: 100 }, checkEveryMs: 50 },
    })
    webhooks.on('transaction_settled', () => {})
    const alerts: Alert[] = []
    webhooks.onAlert((alert) => alerts.push(alert))
    const seen = () => alerts.map((a) => [a.name, a.firing, a.severity, a.eventType ?? null])
    try {
      await new Promise((resolve) => setTimeout(resolve, 400))
      expect(alerts).toEqual([])

      await api.subscriptions.update(id, { ...input, is_active: false })
      await vi.waitFor(() => expect(seen()).toEqual([['subscription', true, 'critical', null]]), waitLong)
      expect(alerts[0]?.message).toBe(
        `subscription ${id} is inactive: the service sends this receiver nothing; update it (is_active, url)`,
      )
      await api.subscriptions.update(id, input)
      await vi.waitFor(() => expect(seen().at(-1)).toEqual(['subscription', false, 'critical', null]), waitLong)

      await api.subscriptions.update(id, { ...input, url: 'http://127.0.0.1:9/elsewhere' })
      await vi.waitFor(() => expect(seen().at(-1)).toEqual(['subscription', true, 'critical', null]), waitLong)
      expect(alerts.at(-1)?.message).toMatch(/points at a url other than this receiver's/)
      await api.subscriptions.update(id, input)
      await vi.waitFor(() => expect(seen().at(-1)).toEqual(['subscription', false, 'critical', null]), waitLong)

      // A type handled here that the subscription does not list.
      webhooks.on('transaction_returned', () => {})
      await vi.waitFor(
        () => expect(seen().at(-1)).toEqual(['subscription', true, 'warning', 'transaction_returned']),
        waitLong,
      )
      await api.subscriptions.update(id, { ...input, event_types: ['transaction_settled', 'transaction_returned'] })
      await vi.waitFor(
        () => expect(seen().at(-1)).toEqual(['subscription', false, 'warning', 'transaction_returned']),
        waitLong,
      )
      expect(alerts).toHaveLength(6)

      // Deleted: not found.
      await api.subscriptions.delete(id)
      await vi.waitFor(() => expect(seen().at(-1)).toEqual(['subscription', true, 'critical', null]), waitLong)
      expect(alerts.at(-1)?.message).toMatch(/was not found/)
      expect(JSON.stringify(alerts)).not.toMatch(/signature_secret|whsec/)
    } finally {
      await webhooks.close()
    }
  }, 120_000)
})

describe('the chat recipe', () => {
  it('posts each alert raised and resolved to a Slack-style webhook as JSON { text }', async () => {
    const chat = await startReceiver(() => 200)
    const webhooks = createWebhooks({
      secret: [{ secret: SECRET, label: 'current' }],
      checkAtStart: false,
      logger: quiet,
      alerts: { signatureFailures: { after: 2 }, checkEveryMs: 50 },
    })
    webhooks.on('transaction_settled', () => {})
    webhooks.onAlert((alert) => postAlert(alert, chat.url))
    try {
      const send = async (secret: string) => {
        const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
        return (await webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })).status
      }
      expect(await send('whsec_not_ours')).toBe(401)
      expect(await send('whsec_not_ours')).toBe(401)
      await vi.waitFor(() => expect(chat.requests).toHaveLength(1), waitLong)
      expect(await send(SECRET)).toBe(200)
      await vi.waitFor(() => expect(chat.requests).toHaveLength(2), waitLong)
      const [raised, resolved] = chat.requests
      expect(raised?.headers['content-type']).toBe('application/json')
      expect(raised?.json?.text).toMatch(
        /^:rotating_light: payhooks signature_failures \(critical\) since \S+: 2 deliveries in a row matched none of the secrets current/,
      )
      expect(resolved?.json?.text).toMatch(
        /^:white_check_mark: payhooks signature_failures \(resolved\) since \S+: resolved: /,
      )
      expect(JSON.stringify(chat.requests.map((r) => r.json))).not.toContain(SECRET)
    } finally {
      await webhooks.close()
      await chat.close()
    }
  }, 120_000)
})
