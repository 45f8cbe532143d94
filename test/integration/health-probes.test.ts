// Readiness probes cost the backend almost nothing (issue 40): health() results are shared and reused about a second,
// counted in Redis commands (INFO commandstats) on a real redis-server, with redisStore and Redis dead letters; a
// probe still sees Redis down once the shared result is a second old.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createWebhooks } from '@payhooks/core'
import { nodeHealth } from '@payhooks/core/node'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { expect, it, vi } from 'vitest'
import { ownRedis } from '../fixtures/own-redis.js'
import { commandCalls } from '../fixtures/redis-commandstats.js'

const secret = 'whsec_health_probes'

/** Commands Redis has run since it started (the INFO asking is counted by the next one). */
async function commandsRun(redis: Redis): Promise<number> {
  return Object.values(await commandCalls(redis)).reduce((sum, calls) => sum + calls, 0)
}

it('answers 1,000 probes, 100 at a time, with at most 50 Redis commands, and sees Redis down a second after its last check', async () => {
  const server = await ownRedis()
  await server.start()
  const redis = new Redis(server.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 })
  const counter = new Redis(server.url)
  const webhooks = createWebhooks({
    secret,
    store: redisStore(redis, { keyPrefix: 'probes:' }),
    deadLetters: redisDeadLetterStore(redis, { keyPrefix: '{probes}:' }),
    checkAtStart: false,
  })
  const http = createServer(nodeHealth(webhooks)).listen(0, '127.0.0.1')
  await new Promise((resolve) => http.once('listening', resolve))
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/ready`
  try {
    await Promise.all([redis.ping(), counter.ping()])
    const one = (await commandsRun(counter)) + 1
    await webhooks.health({ maxAgeMs: 0 })
    const perCheck = (await commandsRun(counter)) - one
    expect(perCheck).toBeGreaterThanOrEqual(4) // what one probe cost before sharing: PING, CONFIG GET, INFO... each

    // 1,000 probes a second, counted rather than timed: the clock moves 100 ms per round of 100 whatever the machine's
    // load (this test must not depend on how fast 1,000 requests go through a shared CI machine).
    const before = await commandsRun(counter)
    const start = Date.now()
    const statuses: number[] = []
    vi.useFakeTimers({ toFake: ['Date'], now: start })
    try {
      for (let round = 0; round < 10; round++) {
        vi.setSystemTime(start + 1000 + round * 100) // past the reuse of the check above
        const answers = await Promise.all(Array.from({ length: 100 }, () => fetch(url)))
        for (const answer of answers) {
          statuses.push(answer.status)
          await answer.arrayBuffer()
        }
      }
    } finally {
      vi.useRealTimers()
    }
    const used = (await commandsRun(counter)) - before - 1
    expect(statuses.filter((status) => status === 200)).toHaveLength(1000)
    expect(used).toBeGreaterThanOrEqual(perCheck) // the probes did check Redis
    expect(used).toBeLessThanOrEqual(50)

    // The outage, on a clock the test moves: a probe shares the last check (made with Redis up) for 1 s of it, and
    // the first probe past that checks Redis again and sees it down, however long a loaded machine takes per probe.
    const status = async () => {
      const answer = await fetch(url)
      await answer.arrayBuffer()
      return answer.status
    }
    // A second past the last round: the shared result (stamped at most start + 1.9 s) is too old to share.
    const checkedAt = start + 1000 + 900 + 1000
    vi.useFakeTimers({ toFake: ['Date'], now: checkedAt })
    try {
      expect(await status()).toBe(200) // a check of its own, with Redis up
      counter.disconnect()
      await server.stop()
      vi.setSystemTime(checkedAt + 999)
      expect(await status()).toBe(200) // still the shared result
      vi.setSystemTime(checkedAt + 1000)
      expect(await status()).toBe(503)
    } finally {
      vi.useRealTimers()
    }
  } finally {
    http.close()
    await webhooks.close()
    counter.disconnect()
    redis.disconnect()
    await server.dispose()
  }
})
