import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisStore } from './store.js'

// No redis-server here: option checks, and a Redis that cannot be reached at all.
const HOUR = 60 * 60 * 1000
const clients: Redis[] = []
const client = (port = 6379, lazyConnect = true) => {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect, retryStrategy: () => 50 })
  redis.on('error', () => {})
  clients.push(redis)
  return redis
}

afterAll(() => {
  for (const redis of clients) redis.disconnect()
})

describe('redisStore options', () => {
  it('refuses a done-marker retention shorter than the 72-hour retry window', () => {
    expect(() => redisStore(client(), { retentionMs: 72 * HOUR - 1 })).toThrow(RangeError)
    expect(() => redisStore(client(), { retentionMs: 1000 })).toThrow(RangeError)
    expect(() => redisStore(client(), { retentionMs: 72.5 * HOUR + 0.5 })).toThrow(RangeError)
    expect(() => redisStore(client(), { retentionMs: 72 * HOUR })).not.toThrow()
  })

  it('refuses a rolloutMs that is not a whole number of 0 or more', () => {
    expect(() => redisStore(client(), { rolloutMs: -1 })).toThrow(RangeError)
    expect(() => redisStore(client(), { rolloutMs: 1.5 })).toThrow(RangeError)
    expect(() => redisStore(client(), { rolloutMs: 0 })).not.toThrow()
  })

  it('refuses a non-positive commandTimeoutMs', () => {
    expect(() => redisStore(client(), { commandTimeoutMs: 0 })).toThrow(RangeError)
    expect(() => redisStore(client(), { commandTimeoutMs: Number.NaN })).toThrow(RangeError)
  })
})

describe('redisStore without a reachable Redis', () => {
  it('rejects every call instead of waiting for a connection that never comes', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address()
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
      })
    })
    const store = redisStore(client(port, false), { commandTimeoutMs: 200 })
    await expect(store.claim('evt_1', 60_000)).rejects.toThrow(/not ready within 200 ms/)
    await expect(store.extend?.('evt_1', 'token', 60_000)).rejects.toThrow(/not ready/)
    await expect(store.complete('evt_1', 'token')).rejects.toThrow(/not ready/)
    await expect(store.release('evt_1', 'token')).rejects.toThrow(/not ready/)
  })

  it('rejects at once when the client was closed for good', async () => {
    const redis = client()
    redis.disconnect()
    const store = redisStore(redis)
    await expect(store.claim('evt_1', 60_000)).rejects.toThrow(/closed/i)
  })
})
