// The store's steps as Redis 7 Functions (packages/redis/src/functions.ts): loaded by init and called by FCALL, loaded
// again when the server lost them, run as scripts on a server without Functions, and on a full Redis the steps of a
// claim taken still run while a copy of a handled ordered event is still answered as a duplicate. Each on a
// redis-server of its own.
import type { OrderingPosition } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, afterEach, expect, it } from 'vitest'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const DIGEST = 'ab'.repeat(16)
const servers: OwnRedis[] = []
const clients: Redis[] = []

async function server(args: string[] = []) {
  const own = await ownRedis({ args })
  servers.push(own)
  await own.start()
  const client = new Redis(own.url)
  clients.push(client)
  return client
}

afterEach(() => {
  for (const client of clients.splice(0)) client.disconnect()
})
afterAll(async () => {
  await Promise.all(servers.map((own) => own.dispose()))
})

/** Calls of each command since the last CONFIG RESETSTAT. */
async function calls(client: Redis): Promise<Record<string, number>> {
  const stats: Record<string, number> = {}
  for (const match of (await client.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    stats[match[1] as string] = Number(match[2])
  return stats
}

const position = (i: number): OrderingPosition => ({
  key: `txn_${i}`,
  at: 1_764_000_000_000 + i,
  eventType: 'transaction_settled',
})

/** Claims, completes and claims again `count` unordered and `count` ordered events: each handled once, then a copy. */
async function handleEvents(store: ReturnType<typeof redisStore>, tag: string, count: number) {
  for (let i = 0; i < count; i++) {
    for (const pos of [undefined, position(i)]) {
      const id = `${tag}-${pos ? 'o' : 'u'}-${i}`
      const claim = await store.claim(id, 30_000, DIGEST, pos)
      expect(claim.status).toBe('claimed')
      if (claim.status !== 'claimed') return
      expect(await store.complete(id, claim.token)).toBe(true)
      expect((await store.claim(id, 30_000, DIGEST, pos)).status).toBe('done')
    }
  }
}

it('after init, the steps run as functions of one library: FCALL, no script', async () => {
  const client = await server()
  const store = redisStore(client, { keyPrefix: 'fn:', ...UNHURRIED })
  await store.init?.()
  const libraries = (await client.call('FUNCTION', 'LIST')) as unknown[][]
  expect(libraries).toHaveLength(1)
  expect(String(libraries[0]?.[1])).toMatch(/^payhooks_[0-9a-f]{16}$/)
  await client.config('RESETSTAT')
  await handleEvents(store, 'a', 5)
  const stats = await calls(client)
  // Each ordered event: claim, complete, the copy's claim; each unordered one: its complete, and the copy's release of
  // the key its SET NX took before its reads found the marker (claim.ts).
  expect(stats.fcall).toBe(25)
  expect(stats.evalsha ?? 0).toBe(0)
  expect(stats.eval ?? 0).toBe(0)
})

it('loads the library again on the first call that finds it gone (FUNCTION FLUSH), and the call goes through', async () => {
  const client = await server()
  const store = redisStore(client, { keyPrefix: 'fn:', ...UNHURRIED })
  await store.init?.()
  const claim = await store.claim('held', 30_000, DIGEST, position(1))
  if (claim.status !== 'claimed') throw new Error(claim.status)
  await client.call('FUNCTION', 'FLUSH')
  await client.config('RESETSTAT')
  expect(await store.complete('held', claim.token)).toBe(true)
  expect((await store.claim('held', 30_000, DIGEST, position(1))).status).toBe('done')
  await handleEvents(store, 'b', 3)
  const stats = await calls(client)
  expect(stats['function|load']).toBe(1)
  expect(stats.evalsha ?? 0).toBe(0)
})

it('runs the same steps as scripts on a server without Functions (FCALL and FUNCTION unknown, as before Redis 7)', async () => {
  const client = await server(['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', ''])
  const store = redisStore(client, { keyPrefix: 'fn:', ...UNHURRIED })
  await store.init?.()
  await client.config('RESETSTAT')
  await handleEvents(store, 'c', 5)
  const stats = await calls(client)
  // The first FCALL is refused as unknown; from then on, scripts only.
  expect(stats.fcall ?? 0).toBe(0)
  expect(stats.evalsha).toBeGreaterThanOrEqual(20)
})

it('on a full Redis, completes a claim taken and answers a copy of a handled ordered event as a duplicate', async () => {
  const client = await server(['--maxmemory-policy', 'noeviction'])
  const store = redisStore(client, { keyPrefix: 'fn:', ...UNHURRIED })
  await store.init?.()
  const handled = await store.claim('handled', 30_000, DIGEST, position(1))
  if (handled.status !== 'claimed') throw new Error(handled.status)
  expect(await store.complete('handled', handled.token)).toBe(true)
  const held = await store.claim('held', 30_000, DIGEST, position(2))
  if (held.status !== 'claimed') throw new Error(held.status)
  await client.config('SET', 'maxmemory', '1')
  try {
    await expect(store.claim('new', 30_000, DIGEST, position(3))).rejects.toThrow(/OOM/)
    expect((await store.claim('handled', 30_000, DIGEST, position(1))).status).toBe('done')
    expect(await store.complete('held', held.token)).toBe(true)
  } finally {
    await client.config('SET', 'maxmemory', '0')
  }
  expect((await store.claim('held', 30_000, DIGEST, position(2))).status).toBe('done')
})
