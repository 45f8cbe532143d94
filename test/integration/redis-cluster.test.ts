// payhooks on a real Redis Cluster (three primaries, started by scripts/test.mjs): the dedupe store's contract, the
// dead-letter store's contract, and the BullMQ queue with a hash-tag prefix, each through an ioredis Cluster client.
import { bullmqQueue, startWorker } from '@payhooks/bullmq'
import { createWebhooks, type Webhooks } from '@payhooks/core'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { deadLetterContract, deadLetterViewContract } from '@payhooks/testing/dead-letter-contract'
import { storeContract } from '@payhooks/testing/store-contract'
import { Cluster } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { bullmqSubject } from '../fixtures/bullmq-dead-letters.js'
import { commandCalls } from '../fixtures/redis-commandstats.js'
import { countRoundTrips } from '../fixtures/redis-round-trips.mjs'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const NODES = process.env.REDIS_CLUSTER_NODES
if (!NODES) {
  throw new Error(
    'REDIS_CLUSTER_NODES is not set: run these tests through `pnpm test` (node scripts/test.mjs), which starts a Redis Cluster',
  )
}
const nodes = NODES.split(',').map((node) => {
  const [host, port] = node.split(':')
  return { host: host as string, port: Number(port) }
})

const clients: Cluster[] = []
function cluster(): Cluster {
  const client = new Cluster(nodes)
  client.on('error', () => {})
  clients.push(client)
  return client
}

afterAll(async () => {
  const [admin] = clients
  // The cluster is this file's alone.
  if (admin) await Promise.all(admin.nodes('master').map((node) => node.flushall()))
  // quit, not disconnect: an abrupt end rejects commands ioredis still holds (a slots refresh), unhandled.
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())))
})

storeContract(
  'redisStore on a Redis Cluster',
  (namespace) => redisStore(cluster(), { keyPrefix: `payhooks-cluster-store:${namespace}:`, ...UNHURRIED }),
  // A short lease that two round trips on a loaded machine renew in time (as in store-contract.test.ts).
  { heldKeys: true, shortLeaseMs: 1500 },
)

deadLetterContract('redisDeadLetterStore on a Redis Cluster', (namespace) =>
  redisDeadLetterStore(cluster(), {
    keyPrefix: `{payhooks-cluster-dead-letters-${namespace}}:`,
    ...UNHURRIED,
  }),
)

deadLetterViewContract('bullmqDeadLetters on a Redis Cluster', (namespace) =>
  bullmqSubject(cluster(), {
    name: 'dead-letters',
    prefix: `{payhooks-cluster-${namespace}}`,
    storePrefix: `payhooks-cluster-dl-store:${namespace}:`,
  }),
)

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('payhooks on a Redis Cluster', () => {
  it('is a cluster of three primaries, and the dedupe store spreads its keys over all of them', async () => {
    const client = cluster()
    const store = redisStore(client, { ...UNHURRIED, keyPrefix: 'payhooks-cluster-spread:' })
    for (let i = 0; i < 30; i++) {
      const claim = await store.claim(`evt_spread_${i}`, 60_000)
      if (claim.status !== 'claimed') throw new Error(`evt_spread_${i} was ${claim.status}`)
      expect(await store.complete(`evt_spread_${i}`, claim.token)).toBe(true)
    }
    const masters = client.nodes('master')
    expect(masters).toHaveLength(3)
    const counts = await Promise.all(masters.map((node) => node.keys('payhooks-cluster-spread:{*}*:*:*')))
    expect(counts.map((keys) => keys.length).every((n) => n > 0)).toBe(true)
    // Each done marker's string is in the slot of its event's own key (the claim's): one slot per script.
    const [admin] = masters as [(typeof masters)[number]]
    const slotOf = async (key: string) => Number(await admin.cluster('KEYSLOT', key))
    const eventSlots = await Promise.all(
      Array.from({ length: 30 }, (_, i) => slotOf(`payhooks-cluster-spread:evt_spread_${i}`)),
    )
    const markerSlots = await Promise.all(counts.flat().map(slotOf))
    expect(new Set(markerSlots)).toEqual(new Set(eventSlots))
    // 24 bytes a marker.
    const bytes = await Promise.all(masters.map((node, i) => Promise.all((counts[i] ?? []).map((k) => node.strlen(k)))))
    expect(bytes.flat().reduce((a, b) => a + b, 0)).toBe(30 * 24)
  })

  it('an ordered event costs four round trips, and the marks and held-keys index spread over every shard (issues 40, 49)', async () => {
    const client = cluster()
    const keyPrefix = 'payhooks-cluster-ordered:'
    const store = redisStore(client, { ...UNHURRIED, keyPrefix })
    const trips = countRoundTrips(client)
    const handle = async (i: number) => {
      const position = { key: `txn_${i}`, at: 1_764_000_000_000, eventType: 'transaction_settled' }
      const claim = await store.claim(`evt_ordered_${i}`, 60_000, undefined, position)
      if (claim.status !== 'claimed') throw new Error(`evt_ordered_${i} was ${claim.status}`)
      expect(await store.complete(`evt_ordered_${i}`, claim.token)).toBe(true)
    }
    // Loads the scripts on every shard. (A claim in a slot whose marker counts changed since this process last read
    // them takes a second round trip: none of these events shares a slot with an earlier one.)
    for (let i = 0; i < 60; i++) await handle(i)
    trips.take()
    for (let i = 100; i < 130; i++) await handle(i)
    const sent = trips.take()
    console.info(`[round trips, Cluster] ordered: ${sent / 30} per event`)
    expect(sent).toBe(4 * 30)
    const masters = client.nodes('master')
    // A fence hash lives as long as its hold; the marks stay, as fields of hashes spread over every shard.
    expect((await Promise.all(masters.map((node) => node.keys(`${keyPrefix}{o:*}f:*`)))).flat()).toEqual([])
    const marks = await Promise.all(masters.map((node) => node.keys(`${keyPrefix}{o:*}m*g*`)))
    expect(marks.every((keys) => keys.length > 0)).toBe(true)
    const fields = await Promise.all(masters.map((node, i) => Promise.all((marks[i] ?? []).map((k) => node.hlen(k)))))
    expect(fields.flat().reduce((a, b) => a + b, 0)).toBe(90)
    // While held, each key's index entry is in its bucket's slot: the buckets of held keys spread too.
    const held = await Promise.all(
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((i) =>
        store.claim(`evt_held_${i}`, 60_000, undefined, {
          key: `txn_held_${i}`,
          at: 1,
          eventType: 'transaction_settled',
        }),
      ),
    )
    const indexes = await Promise.all(masters.map((node) => node.keys(`${keyPrefix}{o:*}held:since`)))
    expect(indexes.filter((keys) => keys.length > 0).length).toBeGreaterThan(1)
    expect((await store.heldKeys?.({ limit: 100 }))?.map((h) => h.key).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `txn_held_${i}`).sort(),
    )
    for (const [i, claim] of held.entries()) {
      if (claim.status === 'claimed') await store.release(`evt_held_${i}`, claim.token)
    }
    expect(await store.heldKeys?.({ limit: 100 })).toEqual([])
  })

  it('the claims and completions of events in flight in one turn of the event loop leave in one write per primary (issue 49)', async () => {
    const client = cluster()
    const keyPrefix = `payhooks-cluster-turn-${Date.now()}:`
    const store = redisStore(client, { keyPrefix, ...UNHURRIED })
    await store.init?.()
    const warm = await store.claim('evt_warm', 60_000)
    if (warm.status === 'claimed') await store.complete('evt_warm', warm.token)
    const trips = countRoundTrips(client)
    const ids = Array.from({ length: 30 }, (_, i) => `evt_turn_${i}`)
    const claims = await Promise.all(
      ids.map(
        (id) =>
          new Promise<Awaited<ReturnType<typeof store.claim>>>((resolve, reject) => {
            setImmediate(() => Promise.resolve(store.claim(id, 60_000)).then(resolve, reject))
          }),
      ),
    )
    const claimWrites = trips.take()
    expect(claims.map((claim) => claim.status)).toEqual(ids.map(() => 'claimed'))
    const completed = await Promise.all(
      ids.map((id, i) => {
        const claim = claims[i]
        return claim?.status === 'claimed' ? store.complete(id, claim.token) : false
      }),
    )
    const completeWrites = trips.take()
    expect(completed).toEqual(ids.map(() => true))
    const again = await Promise.all(ids.map((id) => store.claim(id, 60_000)))
    expect(again.map((claim) => claim.status)).toEqual(ids.map(() => 'done'))
    console.info(`[writes, Cluster, 30 events in one turn] claims: ${claimWrites}, completions: ${completeWrites}`)
    const primaries = client.nodes('master').length
    expect(claimWrites).toBeGreaterThanOrEqual(1)
    expect(claimWrites).toBeLessThanOrEqual(primaries)
    expect(completeWrites).toBeLessThanOrEqual(primaries)
  })

  it("loads the store's library of functions on every primary at init, and runs its steps by FCALL there (issue 49)", async () => {
    const client = cluster()
    const store = redisStore(client, { keyPrefix: 'payhooks-cluster-functions:', ...UNHURRIED })
    await store.init?.()
    const masters = client.nodes('master')
    const libraries = await Promise.all(masters.map((node) => node.call('FUNCTION', 'LIST') as Promise<unknown[][]>))
    const names = libraries.map((list) =>
      list.map((library) => String(library[1])).filter((n) => n.startsWith('payhooks_')),
    )
    expect(names.every((found) => found.length === 1 && found[0] === names[0]?.[0])).toBe(true)
    await Promise.all(masters.map((node) => node.config('RESETSTAT')))
    for (let i = 0; i < 20; i++) {
      const position = { key: `txn_fn_${i}`, at: 1_764_000_000_000, eventType: 'transaction_settled' }
      const claim = await store.claim(`evt_fn_${i}`, 60_000, undefined, position)
      if (claim.status !== 'claimed') throw new Error(`evt_fn_${i} was ${claim.status}`)
      expect(await store.complete(`evt_fn_${i}`, claim.token)).toBe(true)
    }
    const calls = await commandCalls(...masters)
    // Each event: the fence's take and leave, and the done marker's complete.
    expect(calls.fcall).toBe(60)
    expect(calls.evalsha ?? 0).toBe(0)
  })

  it('spreads the done markers and marks of thousands of events evenly over the three primaries (issue 49 item 5)', async () => {
    const client = cluster()
    const keyPrefix = 'payhooks-cluster-even:'
    const store = redisStore(client, { ...UNHURRIED, keyPrefix })
    const EVENTS = 3000
    const ORDERED = 600
    let next = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < EVENTS) {
          const n = next++
          const position =
            n < ORDERED ? { key: `txn_even_${n}`, at: 1_764_000_000_000, eventType: 'transaction_settled' } : undefined
          const claim = await store.claim(`evt_even_${n}`, 60_000, undefined, position)
          if (claim.status !== 'claimed') throw new Error(`evt_even_${n} was ${claim.status}`)
          expect(await store.complete(`evt_even_${n}`, claim.token)).toBe(true)
        }
      }),
    )
    const masters = client.nodes('master')
    expect(masters).toHaveLength(3)
    // Each primary's share of the 16,384 slots, as the Cluster says (equal thirds from redis-cli --cluster create).
    const ranges = (await client.cluster('SLOTS')) as unknown as [number, number, [string, number]][]
    const share = masters.map(
      ({ options }) =>
        ranges
          .filter(([, , [host, port]]) => host === options.host && port === options.port)
          .reduce((sum, [start, end]) => sum + end - start + 1, 0) / 16_384,
    )
    expect(share.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 9)
    /**
     * The keys under `keyPrefix` whose name (past the prefix) matches `name` on a primary, and their entries: a mark
     * hash's fields, a done-marker string's 24-byte records.
     */
    const hashesOn = async (node: (typeof masters)[number], name: RegExp, records = false) => {
      const keys = (await node.keys(`${keyPrefix}*`)).filter((key) => name.test(key.slice(keyPrefix.length)))
      const lengths = await Promise.all(
        keys.map(async (key) => (records ? (await node.strlen(key)) / 24 : node.hlen(key))),
      )
      return { hashes: keys.length, fields: lengths.reduce((a, b) => a + b, 0) }
    }
    const markers = await Promise.all(masters.map((node) => hashesOn(node, /^\{[0-9a-z]+\}\d+:\d+:\d+$/, true)))
    const marks = await Promise.all(masters.map((node) => hashesOn(node, /^\{o:\d\d\}m[0-9a-z]g\d+$/)))
    console.info(
      `[Cluster spread] done markers per primary: ${markers.map((m) => `${m.fields} in ${m.hashes} hashes`).join(', ')}; marks: ${marks.map((m) => m.fields).join(', ')}`,
    )
    expect(markers.reduce((sum, m) => sum + m.fields, 0)).toBe(EVENTS)
    expect(marks.reduce((sum, m) => sum + m.fields, 0)).toBe(ORDERED)
    const allHashes = markers.reduce((sum, m) => sum + m.hashes, 0)
    for (const [i, part] of share.entries()) {
      // Within 15% of the primary's share of the slots (about 5 standard deviations), and marks within 30% (their 64
      // buckets split 21, 22 and 21 over three equal ranges).
      const { fields, hashes } = markers[i] as { fields: number; hashes: number }
      expect(Math.abs(fields - EVENTS * part)).toBeLessThan(0.15 * EVENTS * part)
      expect(Math.abs(hashes - allHashes * part)).toBeLessThan(0.15 * allHashes * part)
      expect(Math.abs((marks[i]?.fields ?? 0) - ORDERED * part)).toBeLessThan(0.3 * ORDERED * part)
    }
  })

  it('refuses a dead-letter key prefix without a hash tag on a Cluster', () => {
    expect(() => redisDeadLetterStore(cluster(), { keyPrefix: 'payhooks-dead-letters:' })).toThrow(
      "redisDeadLetterStore: keyPrefix must hold a hash tag on a Redis Cluster, such as '{payhooks-dead-letters}:'",
    )
  })

  // BullMQ 5 turns a connection closed before it finished initialising into an unhandled rejection, which
  // crashes a Node app; closing a queue or worker right after making it is a shutdown any app can hit.
  it('closes a queue and a worker made a moment before: no unhandled rejection, nothing reported', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const client = cluster()
      const names = { name: 'cluster-close', prefix: '{payhooks-close}' }
      const webhooks = createWebhooks({ secret: 'whsec_cluster_close', store: redisStore(client) })
      const reported: string[] = []
      webhooks.onError((error) => reported.push(error.message))
      // Closed after 0 to 95 ms: at some point each is still initialising (its INFO in flight) on any machine.
      for (let i = 0; i < 20; i++) {
        const queue = bullmqQueue({ connection: client, ...names })
        const worker = startWorker(webhooks as Webhooks<unknown>, { connection: client, ...names })
        await sleep(i * 5)
        await Promise.all([worker.close(i % 2 === 1), queue.close()])
      }
      await sleep(500)
      expect(unhandled).toEqual([])
      expect(reported).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })

  it.each([false, true])(
    'queues events with bullmqQueue (batch: %s) under a hash-tag prefix and runs each once with startWorker',
    async (batch) => {
      const client = cluster()
      const names = { name: `cluster-queue-${batch}`, prefix: `{payhooks-${batch}}` }
      const queue = bullmqQueue({ connection: client, ...names, batch })
      const secret = 'whsec_cluster_queue'
      const webhooks = createWebhooks({
        secret,
        store: redisStore(client, { ...UNHURRIED, keyPrefix: `payhooks-cluster-queue-store-${batch}:` }),
        queue,
        leaseMs: 30_000,
      })
      const runs = new Map<string, number>()
      webhooks.on('transaction_settled', (event) => {
        runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
      })
      const worker = startWorker(webhooks as Webhooks<unknown>, { connection: client, ...names })
      try {
        await worker.ready()
        const ids = Array.from({ length: 10 }, (_, i) => `evt_cluster_${i}`)
        const deliveries = await Promise.all(
          ids.map((id) => signedDelivery(sampleEvent('transaction_settled', { eventId: id }), secret)),
        )
        // Two copies of each, all received in one turn: with batch, one addBulk (one pipeline to one primary).
        const answers = await Promise.all(
          [...deliveries, ...deliveries].map(({ body, headers }) =>
            webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] }),
          ),
        )
        expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200))
        expect(answers.map((answer) => JSON.parse(answer.body).event_id)).toEqual([...ids, ...ids])
        for (let i = 0; i < 1000 && (await queue.counts()).completed < ids.length; i++) await sleep(20)
        expect(await queue.counts()).toMatchObject({ completed: ids.length, failed: 0, waiting: 0, active: 0 })
        expect(ids.map((id) => runs.get(id))).toEqual(ids.map(() => 1))
      } finally {
        await worker.close()
        await queue.close()
      }
    },
  )
})
