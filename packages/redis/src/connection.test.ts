import { createServer } from 'node:net'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { connectionDeadline } from './connection.js'

// No redis-server here: a Redis that cannot be reached, and a client closed for good.
const clients: Redis[] = []
afterAll(() => {
  for (const redis of clients) redis.disconnect()
})

async function unreachable(): Promise<Redis> {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })
  const redis = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50 })
  redis.on('error', () => {})
  clients.push(redis)
  return redis
}

describe('connectionDeadline', () => {
  it('never sends while the connection is down, rejects at the deadline and stops waiting for it', async () => {
    const redis = await unreachable()
    const deadline = connectionDeadline(redis, { timeoutMs: 150, caller: 'testCaller' })
    let sent = 0
    const send = async () => {
      sent++
      return 'sent'
    }
    await expect(deadline.call(send, 'send got no reply')).rejects.toThrow(
      /^testCaller: Redis connection not ready within 150 ms \((connecting|reconnecting)\)$/,
    )
    await expect(deadline.ready()).rejects.toThrow(/not ready within 150 ms/)
    expect(sent).toBe(0)
    // ioredis keeps a 'ready' listener of its own while a connection attempt is under way (connectionReadyHandler).
    const ours = redis.listeners('ready').filter((listener) => listener.name !== 'connectionReadyHandler')
    expect(ours).toEqual([])
  })

  it('rejects at once on a client closed for good, without sending', async () => {
    const redis = new Redis({ lazyConnect: true })
    clients.push(redis)
    redis.disconnect()
    const deadline = connectionDeadline(redis, { timeoutMs: 60_000, caller: 'testCaller' })
    let sent = 0
    await expect(
      deadline.call(async () => {
        sent++
      }, 'send got no reply'),
    ).rejects.toThrow('testCaller: Redis connection closed')
    expect(sent).toBe(0)
  })
})
