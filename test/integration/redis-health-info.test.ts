// redisStore's health() on a Redis whose CONFIG command is disabled (`rename-command CONFIG ""`, as managed Redis
// often has it): the maxmemory-policy and persistence checks fall back to INFO and still report both.
import { createWebhooks, type HealthReport } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'

const servers: OwnRedis[] = []
const clients: Redis[] = []
afterAll(async () => {
  for (const client of clients) client.disconnect()
  for (const server of servers) await server.dispose()
})

/** The health report of a receiver on a new redis-server without CONFIG, started with `args`. */
async function reportWithoutConfig(args: string[], persistent: boolean): Promise<HealthReport> {
  const server = await ownRedis({ persistent, args: ['--rename-command', 'CONFIG', '""', ...args] })
  servers.push(server)
  await server.start()
  const client = new Redis(server.url)
  clients.push(client)
  await expect(client.config('GET', 'maxmemory-policy')).rejects.toThrow(/unknown command/i)
  const webhooks = createWebhooks({ secret: 'whsec_info', store: redisStore(client), checkAtStart: false })
  return webhooks.health()
}

const checkOf = (report: HealthReport, name: string) => report.checks.find((check) => check.name === name)

describe('redisStore health() without CONFIG', () => {
  it('reads noeviction and the append-only file from INFO', async () => {
    const report = await reportWithoutConfig([], true)
    expect(report.ready).toBe(true)
    expect(checkOf(report, 'redis_maxmemory_policy')).toMatchObject({ ok: true, detail: 'noeviction' })
    expect(checkOf(report, 'redis_persistence')).toMatchObject({ ok: true, detail: 'append-only file' })
  })

  it('reads an evicting policy from INFO, and says when snapshots cannot be told from none', async () => {
    const report = await reportWithoutConfig(['--maxmemory-policy', 'volatile-lru'], false)
    const policy = checkOf(report, 'redis_maxmemory_policy')
    expect(policy).toMatchObject({ ok: false, severity: 'warning' })
    expect(policy?.detail).toContain('maxmemory-policy is volatile-lru')
    // Without the append-only file, only CONFIG GET save tells snapshots from none.
    expect(checkOf(report, 'redis_persistence')).toMatchObject({
      ok: false,
      severity: 'warning',
      detail: 'persistence could not be read (INFO or CONFIG refused)',
    })
  })
})
