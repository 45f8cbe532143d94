// What binding the transaction engine to the app's library costs (issue 48): webhooks.receive() of a signed
// transaction_settled whose handler inserts one row through context.db, 16 in flight, on postgresStore (pg's own
// client) and on each binding of @payhooks/postgres: drizzleStore, kyselyStore, knexStore, typeormStore,
// postgresJsStore, prismaStore. Each handler writes with its library's cheapest parameterized statement (pg's query,
// Drizzle's execute(sql``), Kysely's sql``.execute, Knex's raw, TypeORM's query, postgres.js's tagged template,
// Prisma's $executeRawUnsafe on the client of test/fixtures/prisma, generated first), so the figure is
// the store's and the library's transaction, not a query builder's. CPU of this process per handled event
// (process.cpuUsage: the receiver, the store, the library and its driver), wall time for scale; rounds in rotating
// order, medians of per-round ratios against postgresStore. Uses DATABASE_URL, or starts its own PostgreSQL.
// Run: pnpm bench postgres-bindings (or ROUNDS=9 DELIVERIES=2000 node --expose-gc bench/postgres-bindings.bench.mjs)
import { createWebhooks } from '@payhooks/core'
import { createTableSql, expiryIndexSql, postgresStore } from '@payhooks/postgres'
import { drizzleStore } from '@payhooks/postgres/drizzle'
import { knexStore } from '@payhooks/postgres/knex'
import { kyselyStore } from '@payhooks/postgres/kysely'
import { postgresJsStore } from '@payhooks/postgres/postgres-js'
import { prismaStore } from '@payhooks/postgres/prisma'
import { typeormStore } from '@payhooks/postgres/typeorm'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { PrismaPg } from '@prisma/adapter-pg'
import { sql as drizzleSql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import knex from 'knex'
import { Kysely, sql as kyselySql, PostgresDialect } from 'kysely'
import pg from 'pg'
import postgres from 'postgres'
import { DataSource } from 'typeorm'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { generatePrismaClients } from '../scripts/prisma-generate.mjs'

generatePrismaClients()
const { PrismaClient } = await import('../test/fixtures/prisma/generated/prisma/client.js')

const ROUNDS = Number(process.env.ROUNDS ?? 7)
const DELIVERIES = Number(process.env.DELIVERIES ?? 1_500)
const CONCURRENCY = 16
const POOL = CONCURRENCY + 4
const SECRET = 'whsec_bench_bindings'

const server = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => server?.stop())
const url = process.env.DATABASE_URL ?? server.url
const runId = Date.now().toString(36)
const tables = []
const admin = new pg.Pool({ connectionString: url, max: 2 })
const closers = [() => admin.end()]

/** A pg.Pool of the bench's size (each library gets its own, as an app has one). */
function pgPool() {
  const pool = new pg.Pool({ connectionString: url, max: POOL, connectionTimeoutMillis: 10_000 })
  closers.push(() => pool.end())
  return pool
}

const insert = (ledger) => `INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`
const variants = {
  postgresStore: () => {
    const pool = pgPool()
    return {
      store: (table) => postgresStore(pool, options(table)),
      write: (db, l, id) => db.query(insert(l), [id, 10.3]),
    }
  },
  drizzleStore: () => {
    const db = drizzle(pgPool())
    return {
      store: (table) => drizzleStore(db, options(table)),
      write: (tx, l, id) =>
        tx.execute(drizzleSql`INSERT INTO ${drizzleSql.raw(l)} (event_id, amount) VALUES (${id}, ${10.3})`),
    }
  },
  kyselyStore: () => {
    // Kysely's destroy() ends its pool.
    const db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: POOL }) }) })
    closers.push(() => db.destroy())
    return {
      store: (table) => kyselyStore(db, { ...options(table), maxConcurrentEvents: POOL - 1 }),
      write: (trx, l, id) =>
        kyselySql`INSERT INTO ${kyselySql.raw(l)} (event_id, amount) VALUES (${id}, ${10.3})`.execute(trx),
    }
  },
  knexStore: () => {
    const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: POOL } })
    closers.push(() => db.destroy())
    return {
      store: (table) => knexStore(db, options(table)),
      write: (trx, l, id) => trx.raw(`INSERT INTO ${l} (event_id, amount) VALUES (?, ?)`, [id, 10.3]),
    }
  },
  typeormStore: async () => {
    const dataSource = new DataSource({ type: 'postgres', url, poolSize: POOL })
    await dataSource.initialize()
    closers.push(() => dataSource.destroy())
    return {
      store: (table) => typeormStore(dataSource, options(table)),
      write: (m, l, id) => m.query(insert(l), [id, 10.3]),
    }
  },
  postgresJsStore: () => {
    const sql = postgres(url, { max: POOL, onnotice: () => {} })
    closers.push(() => sql.end())
    return {
      store: (table) => postgresJsStore(sql, options(table)),
      write: (tx, l, id) => tx`INSERT INTO ${tx(l)} (event_id, amount) VALUES (${id}, ${10.3})`,
    }
  },
  prismaStore: () => {
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: POOL }) })
    closers.push(() => prisma.$disconnect())
    return {
      store: (table) => prismaStore(prisma, options(table)),
      write: (tx, l, id) => tx.$executeRawUnsafe(insert(l), id, 10.3),
    }
  },
  // new PrismaPg(pool): the store's claims and renewals go to the pool without Prisma's client.
  prismaStoreOnPool: () => {
    const prisma = new PrismaClient({ adapter: new PrismaPg(pgPool()) })
    closers.push(() => prisma.$disconnect())
    return {
      store: (table) => prismaStore(prisma, options(table)),
      write: (tx, l, id) => tx.$executeRawUnsafe(insert(l), id, 10.3),
    }
  },
}
const options = (table) => ({ table, createTable: false, sweepIntervalMs: 0, logger: { warn() {}, error() {} } })
const names = (process.env.ONLY?.split(',') ?? Object.keys(variants)).filter((name) => name in variants)
if (names[0] !== 'postgresStore') names.unshift('postgresStore')

/** A receiver of `variant` on fresh tables, its handler writing one ledger row through context.db. */
async function receiver(variant, label) {
  const table = `bench_${runId}_${label}`
  const ledger = `${table}_ledger`
  tables.push(table, ledger)
  await admin.query(`${createTableSql(table)};\n${expiryIndexSql(table)}`)
  await admin.query(`ALTER TABLE ${table} ADD COLUMN body_digest text`)
  await admin.query(`CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL, amount numeric)`)
  const store = variant.store(table)
  await store.init()
  const webhooks = createWebhooks({ secret: SECRET, store, checkAtStart: false })
  webhooks.on('transaction_settled', async (event, { db }) => {
    await variant.write(db, ledger, event.event_id)
  })
  return webhooks
}

/** Signed deliveries made ahead, so signing is not measured. */
const deliveries = (label, count) =>
  Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const { body, headers } = await signedDelivery(
        sampleEvent('transaction_settled', { eventId: `evt_${label}_${i}` }),
        SECRET,
      )
      return { method: 'POST', body, getHeader: (name) => headers[name] }
    }),
  )

async function run(webhooks, batch) {
  globalThis.gc?.()
  let next = 0
  const wall = performance.now()
  const cpu = process.cpuUsage()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < batch.length) {
        const answer = await webhooks.receive(batch[next++])
        if (answer.status !== 200) throw new Error(`answered ${answer.status}: ${answer.body}`)
      }
    }),
  )
  const used = process.cpuUsage(cpu)
  return { cpuUs: (used.user + used.system) / batch.length, wallUs: ((performance.now() - wall) * 1000) / batch.length }
}

const made = {}
for (const name of names) made[name] = await variants[name]()
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const results = Object.fromEntries(names.map((name) => [name, { cpu: [], wall: [], cpuRatio: [], wallRatio: [] }]))
for (let round = -1; round < ROUNDS; round++) {
  const figures = {}
  const order = names.map((_, i) => names[(i + round + names.length) % names.length])
  for (const name of order) {
    const label = `${name.toLowerCase()}_${round + 1}`
    const webhooks = await receiver(made[name], label)
    figures[name] = await run(webhooks, await deliveries(label, round < 0 ? 300 : DELIVERIES))
    await webhooks.close()
  }
  if (round < 0) continue // warm-up
  for (const name of names) {
    results[name].cpu.push(figures[name].cpuUs)
    results[name].wall.push(figures[name].wallUs)
    results[name].cpuRatio.push(figures[name].cpuUs / figures.postgresStore.cpuUs)
    results[name].wallRatio.push(figures[name].wallUs / figures.postgresStore.wallUs)
  }
}

const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const range = (values) => `${fmt(Math.min(...values), 2)}–${fmt(Math.max(...values), 2)}`
const version = (await admin.query('SHOW server_version')).rows[0].server_version
console.log(
  `node ${process.version}, PostgreSQL ${version}, ${ROUNDS} rounds of ${DELIVERIES} deliveries, ${CONCURRENCY} in flight; medians (per-round ratio range in brackets)`,
)
console.table(
  names.map((name) => ({
    store: name,
    'CPU µs/event': fmt(median(results[name].cpu), 1),
    'CPU vs postgresStore': `${fmt(median(results[name].cpuRatio), 2)}x (${range(results[name].cpuRatio)})`,
    'wall µs/event': fmt(median(results[name].wall), 1),
    'wall vs postgresStore': `${fmt(median(results[name].wallRatio), 2)}x`,
  })),
)
console.log('Target (issue 48): each binding ≤ 1.15x postgresStore in CPU per handled event.')

for (const table of tables) await admin.query(`DROP TABLE IF EXISTS ${table}`)
for (const close of closers.reverse()) await close()
server?.stop()
