// The store's steps as Redis 7 Functions (packages/redis/src/functions.ts): loaded by init and called by FCALL, loaded
// again when the server lost them, run as scripts on a server without Functions, and on a full Redis the steps of a
// claim taken still run while a copy of a handled ordered event is still answered as a duplicate. Each on a
// redis-server of its own.
import type { OrderingPosition } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, afterEach, expect, it } from 'vitest'
import { FENCE_KEYS, fenceArgs, fenceOf, TAKE_ARGS } from '../../packages/redis/src/fences.js'
import { markerLayout } from '../../packages/redis/src/layout.js'
import { CLUSTER_CLAIM_SCRIPTS, CLUSTER_HOLDER_SCRIPTS } from '../../packages/redis/src/store-scripts.js'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'
import { commandCalls } from '../fixtures/redis-commandstats.js'
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
  const stats = await commandCalls(client)
  // Each ordered event: claim (the take, its marker read in the same write), complete, the copy's claim and the release
  // of what that took before its reads found the marker; each unordered one: its complete, and the copy's release of
  // the key its SET NX took before its reads found the marker (claim.ts).
  expect(stats.fcall).toBe(30)
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
  const stats = await commandCalls(client)
  expect(stats['function|load']).toBe(1)
  expect(stats.evalsha ?? 0).toBe(0)
})

it('runs the same steps as scripts on a server without Functions (FCALL and FUNCTION unknown, as before Redis 7)', async () => {
  const client = await server(['--rename-command', 'FCALL', '', '--rename-command', 'FUNCTION', ''])
  const store = redisStore(client, { keyPrefix: 'fn:', ...UNHURRIED })
  await store.init?.()
  await client.config('RESETSTAT')
  await handleEvents(store, 'c', 5)
  const stats = await commandCalls(client)
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

it("runs a Cluster's fence steps as scripts too (its fallback): take, renew, then leave moves the mark and frees the key", async () => {
  // A standalone server runs them as well: their keys share one slot on a Cluster, and here there is one.
  const client = await server()
  const layout = markerLayout(client, 'fn:', 60_000)
  const fence = fenceOf(layout, 'fn:', 'evt_fence', position(7))
  const args = (lease: number, applied: boolean) => fenceArgs(fence, 'token.1', lease, applied, 0, layout.generation())
  const run = (lua: string, argv: readonly unknown[]) =>
    client.eval(lua, FENCE_KEYS, ...fence.keys, ...(argv as (string | number | Buffer)[]))
  const taken = (await run(
    CLUSTER_CLAIM_SCRIPTS.payhooksFenceTake,
    args(30_000, false).slice(0, TAKE_ARGS),
  )) as unknown[]
  expect(taken[0]).toBe('t')
  expect(await run(CLUSTER_CLAIM_SCRIPTS.payhooksFenceTake, args(30_000, false).slice(0, TAKE_ARGS))).toEqual(
    expect.arrayContaining(['b']),
  )
  expect(await run(CLUSTER_HOLDER_SCRIPTS.payhooksFenceRenew, args(30_000, false))).toBe(1)
  await run(CLUSTER_HOLDER_SCRIPTS.payhooksFenceLeave, args(0, true))
  expect(await client.exists(fence.keys[0] as string)).toBe(0)
  const again = (await run(
    CLUSTER_CLAIM_SCRIPTS.payhooksFenceTake,
    args(30_000, false).slice(0, TAKE_ARGS),
  )) as unknown[]
  expect(again[0]).toBe('t')
  expect(again[2]).toBe(`${position(7).at}|transaction_settled|evt_fence`)
})
