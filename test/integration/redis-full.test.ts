// A Redis filled to maxmemory (noeviction) while deliveries flow: new claims are refused (503, the service retries),
// but the claims already taken still renew, write their done marker and release (script flag allow-oom), so when
// every event is resent once Redis has room again, no handler runs twice. A dead letter is never acknowledged
// unless written: a full Redis refuses the park, and the delivery gets a non-2XX answer. On a redis-server of its
// own and on a Redis Cluster of its own (three primaries), each under maxmemory with noeviction.
import { createWebhooks, type LogFields, type WebhookStore } from '@payhooks/core'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Cluster, Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { allowOomCommands } from '../../packages/redis/src/allow-oom.js'
import { startRedisCluster } from '../../scripts/test-services.mjs'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const SECRET = 'whsec_redis_full'
/** Renewed every third of it: a renewal has 2 s of room, 5x a loaded machine's round trip and more. */
const LEASE_MS = 3000
/**
 * The receivers' deadline: room for a claim, a 20 ms handler and a done marker on a loaded machine, 5x and more (at
 * 1.2 s an event resent once Redis had room again could be answered 503 deadline_exceeded); under LEASE_MS.
 */
const DEADLINE_MS = 2500
/** The lease of the claims a test takes by hand before filling Redis. */
const HELD_MS = 60_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A Redis to fill: the client the stores use, and its primaries (one, or the Cluster's three). */
interface Subject {
  client: Redis | Cluster
  primaries(): Redis[]
}

let server: OwnRedis
let standalone: Redis
let cluster: Cluster
let stopCluster: (() => void) | undefined

beforeAll(async () => {
  server = await ownRedis({ args: ['--maxmemory-policy', 'noeviction'] })
  await server.start()
  standalone = new Redis(server.url)
  const started = await startRedisCluster(process.env.REDIS_SERVER_BIN || undefined)
  stopCluster = started.stop
  cluster = new Cluster(
    started.nodes.split(',').map((node: string) => {
      const [host, port] = node.split(':')
      return { host: host as string, port: Number(port) }
    }),
  )
  cluster.on('error', () => {})
  await cluster.ping()
  await Promise.all(cluster.nodes('master').map((node) => node.config('SET', 'maxmemory-policy', 'noeviction')))
}, 120_000)

afterAll(async () => {
  standalone?.disconnect()
  await cluster?.quit().catch(() => cluster.disconnect())
  stopCluster?.()
  await server?.dispose()
})

const subjects: [string, () => Subject][] = [
  ['one redis-server', () => ({ client: standalone, primaries: () => [standalone] })],
  ['a Redis Cluster', () => ({ client: cluster, primaries: () => cluster.nodes('master') })],
]

const usedMemory = async (node: Redis) => Number(/^used_memory:(\d+)/m.exec(await node.info('memory'))?.[1])
const isOom = (error: unknown) => error instanceof Error && /OOM command not allowed/.test(error.message)

/**
 * Fills Redis with junk keys: maxmemory 1 MB above what each primary uses, then 32 KB values until 30 writes in a
 * row are refused for lack of memory (on a Cluster each key goes to the primary of its slot, so all three are full).
 * Then it stays full: a refused write's own buffer is freed after it, and expiring claims free a little more, which
 * would let small writes in again, so maxmemory goes 256 KB below what each primary uses now.
 */
async function fill(subject: Subject): Promise<void> {
  const primaries = subject.primaries()
  for (const node of primaries) {
    await node.config('SET', 'maxmemory', String((await usedMemory(node)) + 1_048_576))
  }
  const junk = 'x'.repeat(32_768)
  for (let i = 0, refused = 0; refused < 30; i++) {
    try {
      await subject.client.set(`junk:${Math.random()}:${i}`, junk)
      refused = 0
    } catch (error) {
      if (!isOom(error)) throw error
      refused++
    }
  }
  // A mebibyte under what it uses (the junk added about that much): a margin of 256 KiB was once used up on a Cluster
  // (memory freed meanwhile), so a new claim went through.
  for (const node of primaries) {
    await node.config('SET', 'maxmemory', String(Math.max(1_048_576, (await usedMemory(node)) - 1_048_576)))
  }
}

/** Room again: no maxmemory (the junk stays; the servers are this file's alone). */
async function makeRoom(subject: Subject): Promise<void> {
  await Promise.all(subject.primaries().map((node) => node.config('SET', 'maxmemory', '0')))
}

function receiver(
  store: WebhookStore,
  options: { deadLetters?: ReturnType<typeof redisDeadLetterStore>; deadlineMs?: number; leaseMs?: number } = {},
) {
  const lines: { fields: LogFields; message: string }[] = []
  const record = (fields: LogFields, message?: string) => void lines.push({ fields, message: String(message) })
  const webhooks = createWebhooks({
    secret: SECRET,
    store,
    leaseMs: options.leaseMs ?? LEASE_MS,
    deadlineMs: options.deadlineMs ?? DEADLINE_MS,
    checkAtStart: false,
    logger: { error: record, warn: record, info: () => {} },
    // Half the events ordered: their fence is renewed, moved and freed by scripts of their own.
    ordering: {
      transaction_settled: {
        key: (event) => (event.data as { transaction_id: string }).transaction_id,
        at: (event) => (event.data as { settlement_date: string }).settlement_date,
      },
    },
    ...(options.deadLetters ? { deadLetters: options.deadLetters } : {}),
  })
  return { webhooks, lines }
}

async function deliveryOf(eventId: string, index: number, createdAt?: string) {
  const type = index % 2 === 0 ? 'transaction_settled' : 'sale_created_from_batch'
  return signedDelivery(sampleEvent(type, { eventId, createdAt }), SECRET)
}

/** Sends `count` deliveries, `concurrency` at a time, in order of index. */
async function sendAll(count: number, concurrency: number, send: (index: number) => Promise<void>) {
  let next = 0
  const worker = async () => {
    while (next < count) await send(next++)
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

describe.each(subjects)('redisStore on %s filled to maxmemory (noeviction)', (_name, subjectOf) => {
  it('refuses new claims while full, yet renews, completes and releases the claims taken', async () => {
    const subject = subjectOf()
    const prefix = `full-steps:${Math.random()}:`
    const store = redisStore(subject.client, { keyPrefix: prefix, ...UNHURRIED })
    const ordered = (key: string) => ({ key: `${prefix}${key}`, at: 1, eventType: 'transaction_settled' })
    // Claimed for far longer than filling Redis takes on a loaded machine (seconds on a Cluster): this test is about
    // what a full Redis refuses, not about a lease lapsing meanwhile.
    const taken = await Promise.all([
      store.claim('evt_a', HELD_MS),
      store.claim('evt_b', HELD_MS, 'digest_b', ordered('b')),
      store.claim('evt_c', HELD_MS),
      store.claim('evt_d', HELD_MS, undefined, ordered('d')),
    ])
    const [a, b, c, d] = taken.map((claim) => (claim.status === 'claimed' ? claim.token : ''))
    await fill(subject)
    try {
      await expect(store.claim('evt_new', LEASE_MS)).rejects.toThrow(/OOM command not allowed/)
      await expect(store.claim('evt_new_ordered', LEASE_MS, undefined, ordered('n'))).rejects.toThrow(/OOM/)
      const { webhooks, lines } = receiver(store)
      const { body, headers } = await deliveryOf('evt_new_delivery', 1)
      const refused = await webhooks.receive({ body, getHeader: (name) => headers[name as never] })
      expect(refused.status).toBe(503)
      expect(JSON.parse(refused.body).error).toBe('store_unavailable')
      expect(lines.map((line) => line.message).join('\n')).toMatch(/store claim failed for evt_new_delivery: OOM/)

      expect(await store.extend?.('evt_a', a as string, HELD_MS)).toBe(true)
      expect(await store.extend?.('evt_b', b as string, HELD_MS)).toBe(true)
      expect(await store.complete('evt_a', a as string)).toBe(true)
      expect(await store.complete('evt_b', b as string)).toBe(true)
      expect(await store.release('evt_c', c as string)).toBe(true)
      expect(await store.release('evt_d', d as string)).toBe(true)
    } finally {
      await makeRoom(subject)
    }
    expect(await store.claim('evt_a', LEASE_MS)).toEqual({ status: 'done' })
    expect(await store.claim('evt_b', LEASE_MS, 'digest_b', ordered('b'))).toMatchObject({ status: 'done' })
    expect(await store.claim('evt_c', LEASE_MS)).toMatchObject({ status: 'claimed' })
    expect(await store.claim('evt_d', LEASE_MS, undefined, ordered('d'))).toMatchObject({ status: 'claimed' })
  })

  it('filled mid-traffic, then every event resent: no handler runs twice', async () => {
    const subject = subjectOf()
    const { webhooks, lines } = receiver(
      redisStore(subject.client, { keyPrefix: `full-traffic:${Math.random()}:`, ...UNHURRIED }),
    )
    const count = 160
    const ids = Array.from({ length: count }, (_, i) => `evt_full_${i}`)
    const deliveries = await Promise.all(ids.map((id, i) => deliveryOf(id, i)))
    // Events 40 to 43 straddle the fill: claimed before it, their handlers end once Redis is full, after a renewal;
    // the other deliveries flow on meanwhile.
    const straddle = new Set(ids.slice(40, 44))
    let fullAt = 0
    let filling = false
    let isFull: () => void = () => {}
    let fillFailed: (error: unknown) => void = () => {}
    const filled = new Promise<void>((resolve, reject) => {
      isFull = resolve
      fillFailed = reject
    })
    const full = () => {
      if (!filling) {
        filling = true
        fill(subject).then(() => {
          fullAt = Date.now()
          isFull()
        }, fillFailed)
      }
      return filled
    }
    const runs = new Map<string, number>()
    let endedWhileFull = 0
    let lastEndAt = 0
    let running = 0
    const handler = async (event: { event_id: string }) => {
      runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
      running++
      try {
        if (straddle.has(event.event_id)) {
          await full()
          await sleep(LEASE_MS / 3 + 150)
        } else {
          await sleep(20)
        }
      } finally {
        running--
      }
      lastEndAt = Date.now()
      if (fullAt > 0 && fullAt <= lastEndAt) endedWhileFull++
    }
    webhooks.on('transaction_settled', handler)
    webhooks.on('sale_created_from_batch', handler)
    const send = async (index: number) => {
      // The last quarter is sent once Redis is full, however long filling it took: deliveries flow on during the
      // fill, and some certainly find it full (on a loaded machine all 160 could be answered before it was).
      if (index >= (count * 3) / 4) await filled
      const { body, headers } = deliveries[index] as Awaited<ReturnType<typeof deliveryOf>>
      const answer = await webhooks.receive({ body, getHeader: (name) => headers[name as never] })
      return { status: answer.status, body: JSON.parse(answer.body) as { status?: string; error?: string } }
    }

    const first: { status: number; body: { status?: string; error?: string } }[] = []
    try {
      await sendAll(count, 8, async (index) => {
        first[index] = await send(index)
      })
      expect(fullAt).toBeGreaterThan(0)
      // A run answered past the deadline (the straddling ones wait for the fill) goes on after its answer: every run
      // ends while Redis is still full, then it stays full a lease longer, so a claim whose done marker was refused
      // would have lapsed.
      await vi.waitFor(() => expect(running).toBe(0), { timeout: 30_000, interval: 20 })
      await sleep(Math.max(0, lastEndAt + LEASE_MS + 400 - Date.now()))
    } finally {
      await makeRoom(subject)
    }
    const again: { status: number; body: { status?: string } }[] = []
    await sendAll(count, 8, async (index) => {
      again[index] = await send(index)
    })
    const twice = [...runs].filter(([, times]) => times > 1)
    expect(twice).toEqual([])
    expect(again.filter((answer) => answer.status !== 200)).toEqual([])
    expect(runs.size).toBe(count)
    for (const [i, id] of ids.entries()) {
      if (first[i]?.status === 200) expect(again[i]?.body.status, id).toBe('duplicate')
    }
    // The fill came mid-traffic: runs ended while Redis was full, and deliveries found it full (503, retried).
    expect(endedWhileFull).toBeGreaterThanOrEqual(straddle.size)
    expect(first.filter((answer) => answer.body.error === 'store_unavailable').length).toBeGreaterThan(0)
    // No done marker was refused: not one "answered 200 processed" store failure.
    expect(lines.filter((line) => line.fields.operation === 'complete')).toEqual([])
  }, 120_000)

  it('refuses to park a dead letter while full: the delivery is answered non-2XX, and parked on its resend', async () => {
    const subject = subjectOf()
    const deadLetters = redisDeadLetterStore(subject.client, {
      keyPrefix: `{full-dead-letters-${Math.random()}}:`,
      ...UNHURRIED,
    })
    // Filling Redis (while the first run's handler holds its claim) can take seconds on a loaded Cluster: past
    // DEADLINE_MS the answer would be the deadline's, the handler still filling when the test made room again. The
    // deadline leaves the fill 9 s, so the answer read is the one to the refused park.
    const { webhooks, lines } = receiver(
      redisStore(subject.client, { keyPrefix: `full-park:${Math.random()}:`, ...UNHURRIED }),
      {
        deadLetters,
        deadlineMs: 9000,
        leaseMs: 10_000,
      },
    )
    // Its layout is written on first use: done before Redis fills, as by any earlier park or start-up check.
    await deadLetters.init?.()
    let runs = 0
    webhooks.on('sale_created_from_batch', async () => {
      // Redis fills while the handler runs (its claim was taken), then the handler fails on the service's last tries.
      if (++runs === 1) {
        await fill(subject)
        // Kept full whatever expiring claims of the earlier tests free meanwhile (on a Cluster the letter's slot is
        // on one primary, which could find room again): no write but a taken claim's (allow-oom) goes in.
        await Promise.all(subject.primaries().map((node) => node.config('SET', 'maxmemory', '1')))
      }
      throw new Error('ledger refused the sale')
    })
    const lastTries = new Date(Date.now() - 71.5 * 3_600_000).toISOString()
    const { body, headers } = await deliveryOf('evt_full_park', 1, lastTries)
    const deliver = () => webhooks.receive({ body, getHeader: (name) => headers[name as never] })
    let refused: Awaited<ReturnType<typeof deliver>>
    try {
      refused = await deliver()
    } finally {
      await makeRoom(subject)
    }
    expect(refused.status).toBeGreaterThanOrEqual(500)
    expect(JSON.parse(refused.body).error).not.toBe('deadline_exceeded')
    expect(JSON.parse(refused.body).status).toBeUndefined()
    expect(lines.map((line) => line.message).join('\n')).toMatch(/dead-letter park failed for evt_full_park: OOM/)
    expect(await deadLetters.get('evt_full_park')).toBeUndefined()

    const parked = await deliver()
    expect(parked.status).toBe(200)
    expect(JSON.parse(parked.body)).toMatchObject({ status: 'parked' })
    expect(await deadLetters.get('evt_full_park')).toMatchObject({ status: 'parked', code: 'handler_failed' })
  })
})

describe('the allow-oom scripts on a server that cannot read script flags (Redis before 7)', () => {
  it('run unflagged from the first refusal on: a full Redis then refuses their writes, as before', async () => {
    type Set<Name extends string> = Record<Name, (key: string, value: string) => Promise<string>>
    const lua = "return redis.call('SET', KEYS[1], ARGV[1])"
    const flagged = allowOomCommands<Set<'payhooksTestFlagged'>>(standalone, {
      payhooksTestFlagged: { numberOfKeys: 1, lua },
    })
    // A flag no server knows stands for the shebang a Redis 6 cannot compile.
    const unknown = allowOomCommands<Set<'payhooksTestUnknown'>>(
      standalone,
      { payhooksTestUnknown: { numberOfKeys: 1, lua } },
      'no-such-flag',
    )
    const errorReplies = async () => Number(/^total_error_replies:(\d+)/m.exec(await standalone.info('stats'))?.[1])
    expect(await unknown.payhooksTestUnknown('flags:a', 'x')).toBe('OK')
    // From then on the unflagged script alone: no flagged try refused again.
    const before = await errorReplies()
    expect(await unknown.payhooksTestUnknown('flags:b', 'x')).toBe('OK')
    expect(await errorReplies()).toBe(before)

    const subject: Subject = { client: standalone, primaries: () => [standalone] }
    await fill(subject)
    try {
      expect(await flagged.payhooksTestFlagged('flags:c', 'x')).toBe('OK')
      await expect(unknown.payhooksTestUnknown('flags:d', 'x')).rejects.toThrow(/OOM command not allowed/)
    } finally {
      await makeRoom(subject)
    }
  })
})
