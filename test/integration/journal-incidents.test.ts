// The journal tells the truth about incidents, and cannot be filled (issue 47), on a real Redis and PostgreSQL:
// answers given while Redis refused writes (full, noeviction) are written once it takes them again; a journal on a
// PostgreSQL down at start, then cut again, writes every answer of the meantime by itself; 20,000 replays of one
// captured delivery leave the journal a few records (keys and bytes on Redis, rows on PostgreSQL) and a real
// event's answers intact.
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { createWebhooks, type Journal, memoryStore, type RawDelivery } from '@payhooks/core'
import { postgresJournal } from '@payhooks/postgres'
import { redisJournal } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'
import { databaseUrl } from '../fixtures/postgres.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const SECRET = 'whsec_journal_incidents'
const quiet = { error() {}, warn() {}, info() {} }
const REDIS_URL = process.env.REDIS_URL as string
const closing: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => {})
})

async function signed(event: object): Promise<RawDelivery> {
  const { body, headers } = await signedDelivery(event, SECRET)
  return { method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] }
}

/** A receiver `instance` on `journal`, with a store of its own. */
function receiver(journal: Journal, instance: string) {
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), journal, instance, logger: quiet })
  webhooks.on('transaction_settled', () => {})
  closing.push(() => webhooks.close())
  return webhooks
}

/** A loopback TCP relay to PostgreSQL that refuses connections, and cuts the open ones, while it is down. */
async function relay(target: URL) {
  let up = false
  const open = new Set<Socket>()
  const server: Server = createServer((client) => {
    if (!up) return void client.destroy()
    const upstream = connect(Number(target.port || 5432), target.hostname)
    const close = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
    }
    open.add(client)
    for (const socket of [client, upstream]) socket.on('error', close).on('close', close)
    client.pipe(upstream).pipe(client)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  closing.push(() => new Promise((resolve) => server.close(resolve)))
  const url = new URL(target)
  url.hostname = '127.0.0.1'
  url.port = String((server.address() as { port: number }).port)
  return {
    url: url.toString(),
    set(next: boolean) {
      up = next
      if (!next) for (const socket of open) socket.destroy()
    },
  }
}

describe('answers given while the journal could not be written', () => {
  it('while Redis refused writes (full): written once it takes them, the first run and its instance shown, the double run visible', async () => {
    const server: OwnRedis = await ownRedis({ args: ['--maxmemory-policy', 'noeviction'] })
    await server.start()
    closing.push(() => server.dispose())
    const admin = new Redis(server.url)
    closing.push(async () => admin.disconnect())
    const journalOn = () => {
      const client = new Redis(server.url)
      closing.push(async () => client.disconnect())
      return redisJournal(client, { ...UNHURRIED, keyPrefix: 'incident:' })
    }
    const one = receiver(journalOn(), 'web-1')
    const two = receiver(journalOn(), 'web-2')
    const board = receiver(journalOn(), 'board')
    const used = Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))?.[1])
    await admin.config('SET', 'maxmemory', String(Math.floor(used / 2)))
    await expect(admin.set('probe', 'x')).rejects.toThrow(/OOM/)

    const twice = sampleEvent('transaction_settled')
    const others = Array.from({ length: 20 }, () => sampleEvent('transaction_settled'))
    expect((await one.receive(await signed(twice))).status).toBe(200)
    for (const event of others) expect((await one.receive(await signed(event))).status).toBe(200)
    await one.events.flush()
    expect((await one.health()).checks.find((check) => check.name === 'journal')?.ok).toBe(false)
    expect(await admin.dbsize()).toBe(0)

    await admin.config('SET', 'maxmemory', '0')
    // Run again elsewhere (another store), after Redis took writes again.
    expect((await two.receive(await signed(twice))).status).toBe(200)
    await two.events.flush()
    // web-1 writes its answers of the incident by itself (its retry, not a read).
    await vi.waitFor(async () => expect((await board.events.get(twice.event_id as string))?.answers).toHaveLength(2), {
      timeout: 10_000,
      interval: 200,
    })
    const timeline = await board.events.get(twice.event_id as string)
    expect(timeline?.answers.map((a) => [a.outcome, a.instance])).toEqual([
      ['processed', 'web-1'],
      ['processed', 'web-2'],
    ])
    expect(timeline?.handledAt).toEqual(timeline?.answers[0]?.at)
    for (const event of others) {
      expect((await board.events.get(event.event_id as string))?.answers.map((a) => a.instance)).toEqual(['web-1'])
    }
    expect((await one.health()).checks.find((check) => check.name === 'journal')?.ok).toBe(true)
  })

  it('with PostgreSQL down at start, then cut again: every answer of the meantime is written by itself', async () => {
    const table = `journal_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    const admin = new pg.Pool({ connectionString: databaseUrl(), max: 1 })
    closing.push(async () => {
      await admin.query(`DROP TABLE IF EXISTS ${table}`)
      await admin.end()
    })
    const cut = await relay(new URL(databaseUrl()))
    const pool = new pg.Pool({ connectionString: cut.url, max: 2, connectionTimeoutMillis: 2000 })
    pool.on('error', () => {})
    closing.push(() => pool.end())
    const webhooks = receiver(postgresJournal(pool, { table, logger: quiet }), 'web-1')
    const deliver = async (count: number) => {
      const events = Array.from({ length: count }, () => sampleEvent('transaction_settled'))
      for (const event of events) expect((await webhooks.receive(await signed(event))).status).toBe(200)
      return events
    }
    const rows = async () => {
      const { rows: found } = await admin.query('SELECT to_regclass($1) AS t', [table])
      if (found[0].t === null) return 0
      return (await admin.query(`SELECT count(*)::integer AS n FROM ${table}`)).rows[0].n as number
    }
    const started = await deliver(60)
    await webhooks.events.flush()
    expect(await rows()).toBe(0)
    cut.set(true)
    await vi.waitFor(async () => expect(await rows()).toBe(60), { timeout: 20_000, interval: 250 })
    // A restart: answers given while it is down are written once it is back, nobody asking.
    cut.set(false)
    await deliver(20)
    await webhooks.events.flush()
    cut.set(true)
    await vi.waitFor(async () => expect(await rows()).toBe(80), { timeout: 20_000, interval: 250 })
    const timeline = await webhooks.events.get(started[0]?.event_id as string)
    expect(timeline?.handledAt).toBeInstanceOf(Date)
    expect(timeline?.answers.map((a) => a.outcome)).toEqual(['processed'])
  })
})

describe('20,000 replays of one captured delivery', () => {
  /** A real event answered 500 then 200, then one captured delivery 20,001 times; read back from another instance. */
  async function flood(journals: () => Journal, measure: () => Promise<void>) {
    const web = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      journal: journals(),
      instance: 'web-1',
      logger: quiet,
    })
    closing.push(() => web.close())
    let fail = true
    web.on('transaction_settled', () => {
      if (fail) throw new Error('ledger down')
    })
    const board = receiver(journals(), 'board')
    const real = sampleEvent('transaction_settled')
    expect((await web.receive(await signed(real))).status).toBe(500)
    fail = false
    expect((await web.receive(await signed(real))).status).toBe(200)
    const captured = await signed(sampleEvent('transaction_settled'))
    const answers: Promise<unknown>[] = []
    for (let i = 0; i <= 20_000; i++) answers.push(web.receive(captured))
    await Promise.all(answers)
    await web.events.flush()
    await measure()
    const timeline = await board.events.get(real.event_id as string)
    expect(timeline?.answers.map((a) => [a.status, a.outcome])).toEqual([
      [500, 'handler_failed'],
      [200, 'processed'],
    ])
    const copies = await board.events.get(JSON.parse(captured.body as string).event_id)
    expect(copies?.answers.reduce((sum, a) => sum + a.copies, 0)).toBe(20_001)
    expect((await board.events.counts({ minutes: 5 })).total.duplicate).toBe(20_000)
    return copies?.answers.length ?? 0
  }

  it('leave Redis a few keys and kilobytes', async () => {
    const prefix = `flood:${randomUUID()}:`
    const client = new Redis(REDIS_URL)
    closing.push(async () => {
      const keys = await client.keys(`${prefix}*`)
      if (keys.length > 0) await client.del(...keys)
      client.disconnect()
    })
    const records = await flood(
      () => redisJournal(client, { ...UNHURRIED, keyPrefix: prefix }),
      async () => {
        const keys = await client.keys(`${prefix}*`)
        let bytes = 0
        for (const key of keys) bytes += Number(await client.memory('USAGE', key))
        console.log(`redisJournal after 20,000 replays: ${keys.length} keys, ${bytes} bytes`)
        // Per shard touched: streams, index, meta, dictionary, counts: a handful of keys, whatever the replays.
        expect(keys.length).toBeLessThanOrEqual(16)
        expect(bytes).toBeLessThan(32_000)
      },
    )
    // The first run, 3 copies and a count, twice if a minute turned.
    expect(records).toBeLessThanOrEqual(1 + 4 * 2)
  })

  it('leave PostgreSQL a few rows', async () => {
    const table = `journal_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 })
    closing.push(async () => {
      await pool.query(`DROP TABLE IF EXISTS ${table}`)
      await pool.end()
    })
    const journal = postgresJournal(pool, { table, sweepIntervalMs: 0 })
    await flood(
      () => journal,
      async () => {
        const { rows } = await pool.query(`SELECT count(*)::integer AS n FROM ${table}`)
        console.log(`postgresJournal after 20,000 replays: ${rows[0].n} rows`)
        // 2 answers of the real event, the first run, 3 copies and a count (twice if a minute turned).
        expect(rows[0].n).toBeLessThanOrEqual(2 + 1 + 4 * 2)
      },
    )
    const { rows } = await pool.query(`SELECT sum(coalesce(copies, 1))::integer AS answers FROM ${table}`)
    expect(rows[0].answers).toBe(20_003)
  })
})
