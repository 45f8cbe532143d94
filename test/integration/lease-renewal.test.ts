// A handler running past its lease, while the service's retries reach another receiver on the same store: the
// receiver renews the claim (store.extend), so every retry meanwhile is answered 409 and the handler runs once. On
// every store payhooks ships, each on its real backing.
import { randomUUID } from 'node:crypto'
import { createWebhooks, memoryStore, type WebhookError, type WebhookStore } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const { REDIS_URL, DATABASE_URL } = process.env
if (!REDIS_URL || !DATABASE_URL) {
  throw new Error('REDIS_URL and DATABASE_URL are needed: run these tests through `pnpm test` (node scripts/test.mjs)')
}
const secret = 'whsec_lease_renewal'
// Renewed every third of it: a renewal may come 2 s late before the lease lapses (at 450 ms, 300 ms of room, a
// renewal on a loaded machine came too late). The handler runs 1.2 leases, past the first renewal after the lease
// would have ended.
const LEASE_MS = 3000
const RUN_MS = 1.2 * LEASE_MS
const DEADLINE_MS = 150
const id = randomUUID().replaceAll('-', '').slice(0, 12)
const table = `lease_renewal_${id}`

const redisClients: Redis[] = []
const pools: pg.Pool[] = []
const sharedMemory = memoryStore()

/** Two instances of one fleet's store: each receiver gets its own, sharing the backing data. */
const stores: Record<string, () => WebhookStore<object>> = {
  memoryStore: () => sharedMemory,
  redisStore: () => {
    const client = new Redis(REDIS_URL)
    redisClients.push(client)
    // A renewal the store gave up on at its 1 s default commandTimeoutMs would lose the claim with 1 s of it left.
    return redisStore(client, { keyPrefix: `lease-renewal:${id}:`, ...UNHURRIED })
  },
  postgresStore: () => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 3 })
    pools.push(pool)
    return postgresStore(pool, { table })
  },
}

afterAll(async () => {
  await pools[0]?.query(`DROP TABLE IF EXISTS ${table}`)
  await Promise.all(pools.map((pool) => pool.end()))
  for (const client of redisClients) client.disconnect()
})

function gate() {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

describe.each(Object.keys(stores))('lease renewal on %s', (name) => {
  it(`runs a handler lasting past its ${LEASE_MS} ms lease once, answering the retries meanwhile 409`, async () => {
    const errors: WebhookError[] = []
    // The first answers at its deadline while its handler goes on; the second's deadline leaves a loaded machine's
    // claim query seconds (at 150 ms it could answer 503 deadline_exceeded, not what the store said).
    // No bulkheads: on a small pool (a share of 1 slot) the one long run would quarantine its type, reported too.
    const [first, second] = [DEADLINE_MS, LEASE_MS - 100].map((deadlineMs) =>
      createWebhooks({ secret, store: stores[name]!(), leaseMs: LEASE_MS, deadlineMs, bulkheads: false }).onError((e) =>
        errors.push(e),
      ),
    )
    let runs = 0
    let startedAt = Number.POSITIVE_INFINITY
    let aborted = false
    const release = gate()
    const finished = gate()
    for (const webhooks of [first!, second!]) {
      webhooks.on('transaction_settled', async (_event, { signal }) => {
        runs++
        startedAt = Date.now()
        await release.promise
        aborted = signal.aborted
        finished.open()
      })
    }
    const { body, headers } = await signedDelivery(
      sampleEvent('transaction_settled', { eventId: `evt_${name}` }),
      secret,
    )
    const delivery = {
      method: 'POST',
      body,
      getHeader: (header: string) => (headers as Record<string, string>)[header],
    }

    const firstAnswer = first!.receive(delivery)
    await vi.waitFor(() => expect(runs).toBe(1), { timeout: 10_000, interval: 20 })
    // Retries every 200 ms, the last one sent once the handler ran RUN_MS.
    const retries: number[] = []
    for (let sentAt = 0; sentAt < startedAt + RUN_MS; ) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      sentAt = Date.now()
      retries.push((await second!.receive(delivery)).status)
    }
    release.open()
    await finished.promise
    expect((await firstAnswer).status).toBe(503) // at its deadline; the handler went on
    expect(retries.length).toBeGreaterThan(5)
    expect(new Set(retries)).toEqual(new Set([409]))
    await vi.waitFor(async () => expect(JSON.parse((await second!.receive(delivery)).body).status).toBe('duplicate'), {
      timeout: 10_000,
    })
    expect(runs).toBe(1)
    expect(aborted).toBe(false)
    expect(errors.map((e) => e.code)).toEqual(['deadline_exceeded'])
  })
})
