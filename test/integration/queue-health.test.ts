// bullmqQueue's health(): the queue's Redis reachable (with its latency), its maxmemory-policy noeviction (BullMQ
// requires it: an evicted job is an event answered 200 and never run) and its persistence, in webhooks.health().
import { bullmqQueue } from '@payhooks/bullmq'
import { createWebhooks, type HealthReport, memoryStore } from '@payhooks/core'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort, type OwnRedis, ownRedis } from '../fixtures/own-redis.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')

const secret = 'whsec_queue_health'
const closers: (() => Promise<unknown>)[] = []
const servers: OwnRedis[] = []
afterAll(async () => {
  for (const close of closers) await close().catch(() => {})
  for (const server of servers) await server.dispose()
})

function receiverOn(connection: string) {
  const queue = bullmqQueue({ connection, name: `health-${Math.random().toString(36).slice(2)}` })
  const webhooks = createWebhooks({ secret, store: memoryStore(), queue, checkAtStart: false })
  closers.push(
    () => webhooks.close(),
    () => queue.close(),
  )
  return webhooks
}

const checkOf = (report: HealthReport, name: string) => report.checks.find((check) => check.name === name)

describe('bullmqQueue health()', () => {
  it("reports the queue's Redis reachable, noeviction and persistent, in webhooks.health()", async () => {
    const report = await receiverOn(REDIS_URL).health()
    expect(report.ready).toBe(true)
    expect(checkOf(report, 'bullmq_redis')).toMatchObject({ ok: true, latencyMs: expect.any(Number) })
    expect(checkOf(report, 'bullmq_redis_maxmemory_policy')).toMatchObject({ ok: true, detail: 'noeviction' })
    // scripts/test.mjs gives its redis-server an append-only file.
    expect(checkOf(report, 'bullmq_redis_persistence')).toMatchObject({ ok: true, detail: 'append-only file' })
  })

  it('warns when the policy may evict jobs, and when nothing is persisted', async () => {
    const server = await ownRedis({ args: ['--maxmemory-policy', 'allkeys-lru'] })
    servers.push(server)
    await server.start()
    const report = await receiverOn(server.url).health()
    expect(report.ready).toBe(true) // warnings
    const policy = checkOf(report, 'bullmq_redis_maxmemory_policy')
    expect(policy).toMatchObject({ ok: false, severity: 'warning' })
    expect(policy?.detail).toContain('maxmemory-policy is allkeys-lru')
    expect(policy?.detail).toContain('BullMQ requires noeviction')
    expect(checkOf(report, 'bullmq_redis_persistence')).toMatchObject({ ok: false, severity: 'warning' })
  })

  it('is not ready when the queue’s Redis does not answer', async () => {
    const port = await freePort()
    const report = await receiverOn(`redis://127.0.0.1:${port}`).health({ timeoutMs: 3000 })
    expect(report.ready).toBe(false)
    expect(checkOf(report, 'bullmq_redis')).toMatchObject({ ok: false })
    expect(JSON.stringify(report)).not.toContain(String(port))
  })
})
