import { createServer } from 'node:net'
import { Cluster, Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisDeadLetterStore } from './dead-letters.js'

// No redis-server here: option checks, and a Redis that cannot be reached at all.
const clients: (Redis | Cluster)[] = []
const client = (port = 6379, lazyConnect = true) => {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect, retryStrategy: () => 50 })
  redis.on('error', () => {})
  clients.push(redis)
  return redis
}

afterAll(() => {
  for (const redis of clients) redis.disconnect()
})

describe('redisDeadLetterStore options', () => {
  it.each([
    [{ keyPrefix: '' }, TypeError, 'redisDeadLetterStore: keyPrefix must be a non-empty string'],
    [
      { replayedRetentionMs: 0 },
      RangeError,
      'redisDeadLetterStore: replayedRetentionMs must be a positive whole number',
    ],
    [
      { replayedRetentionMs: 1.5 },
      RangeError,
      'redisDeadLetterStore: replayedRetentionMs must be a positive whole number',
    ],
    [{ commandTimeoutMs: -1 }, RangeError, 'redisDeadLetterStore: commandTimeoutMs must be a positive number'],
  ])('refuses %o', (options, type, message) => {
    expect(() => redisDeadLetterStore(client(), options)).toThrow(new type(message))
  })

  it('is durable, and takes any prefix on a standalone Redis', () => {
    expect(redisDeadLetterStore(client()).durable).toBe(true)
    expect(() => redisDeadLetterStore(client(), { keyPrefix: 'shop:dead-letters:' })).not.toThrow()
  })

  it('wants a hash tag in the prefix on a Cluster, the client’s own keyPrefix included', () => {
    const cluster = (keyPrefix?: string) => {
      const made = new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true, keyPrefix })
      clients.push(made)
      return made
    }
    const message =
      "redisDeadLetterStore: keyPrefix must hold a hash tag on a Redis Cluster, such as '{payhooks-dead-letters}:'"
    expect(() => redisDeadLetterStore(cluster(), { keyPrefix: 'shop:dead-letters:' })).toThrow(new TypeError(message))
    expect(() => redisDeadLetterStore(cluster(), { keyPrefix: 'shop:{}:' })).toThrow(new TypeError(message))
    expect(() => redisDeadLetterStore(cluster())).not.toThrow()
    expect(() => redisDeadLetterStore(cluster(), { keyPrefix: 'shop:{dead}:' })).not.toThrow()
    expect(() => redisDeadLetterStore(cluster('{shop}:'), { keyPrefix: 'dead-letters:' })).not.toThrow()
  })
})

describe('redisDeadLetterStore without a reachable Redis', () => {
  it('rejects every call within commandTimeoutMs instead of waiting for a connection that never comes', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address()
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
      })
    })
    const store = redisDeadLetterStore(client(port, false), { commandTimeoutMs: 200 })
    const event = {
      eventId: 'evt_1',
      eventType: 'transaction_settled',
      body: new Uint8Array([123, 125]),
      headers: {},
      code: 'schema_mismatch' as const,
      reason: 'r',
      createdAt: undefined,
      parkedAt: new Date(),
    }
    await expect(store.park(event)).rejects.toThrow(/^redisDeadLetterStore: Redis connection not ready within 200 ms/)
    await expect(store.get('evt_1')).rejects.toThrow(/not ready/)
    await expect(store.list()).rejects.toThrow(/not ready/)
    await expect(store.markReplayed('evt_1', new Date())).rejects.toThrow(/not ready/)
  })
})
