// What binding the transaction engine to the app's library costs on PostgreSQL (issue 48): webhooks.receive() of a
// signed transaction_settled whose handler inserts one row through context.db, 16 in flight, on postgresStore (pg's
// own client) and on each binding of @payhooks/postgres: drizzleStore, kyselyStore, knexStore, typeormStore,
// postgresJsStore, prismaStore. Each handler writes with its library's cheapest parameterized statement (pg's query,
// Drizzle's execute(sql``), Kysely's sql``.execute, Knex's raw, TypeORM's query, postgres.js's tagged template,
// Prisma's $executeRawUnsafe on the client of test/fixtures/prisma, generated first), so the figure is the store's
// and the library's transaction, not a query builder's. Beside each binding, the same library by hand (see
// binding-rounds.mjs): the binding over it is what is ours. Statements per event from pg_stat_statements (preloaded
// in the PostgreSQL it starts; with DATABASE_URL, when the server has it). Uses DATABASE_URL, or starts its own.
// Run: pnpm bench postgres-bindings (or ROUNDS=9 DELIVERIES=2000 node --expose-gc bench/postgres-bindings.bench.mjs;
// ONLY=drizzleStore,knexStore for some; HAND=0 without the by-hand rows; CPU_PROFILE=<dir> for a V8 CPU profile of
// each variant's run in the last round; ALONE=1 without postgresStore)
import { createTableSql, expiryIndexSql, postgresStore } from '@payhooks/postgres'
import { drizzleStore } from '@payhooks/postgres/drizzle'
import { knexStore } from '@payhooks/postgres/knex'
import { kyselyStore } from '@payhooks/postgres/kysely'
import { postgresJsStore } from '@payhooks/postgres/postgres-js'
import { prismaStore } from '@payhooks/postgres/prisma'
import { typeormStore } from '@payhooks/postgres/typeorm'
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
import { bindingRounds, POOL, quiet } from './binding-rounds.mjs'

generatePrismaClients()
const { PrismaClient } = await import('../test/fixtures/prisma/generated/prisma/client.js')

const server = process.env.DATABASE_URL
  ? undefined
  : await startPostgres(undefined, { shared_preload_libraries: 'pg_stat_statements' })
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

const options = (table) => ({ table, createTable: false, sweepIntervalMs: 0, logger: quiet })
const insert = (ledger) => `INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`
// The by-hand stores' claim (a 5-minute lease) and done marker (kept 73 hours, if the lease still holds).
const claimSql = (t) => `INSERT INTO ${t} (event_id, token, expires_at) VALUES ($1, $2, now() + interval '5 minutes')`
const doneSql = (t) =>
  `UPDATE ${t} SET token = NULL, expires_at = now() + interval '73 hours' WHERE event_id = $1 AND token = $2 AND expires_at > now()`
const duplicate = (error) =>
  (error?.code ?? error?.cause?.code ?? error?.meta?.code) === '23505' || /23505|unique/i.test(String(error?.message))
const questionMarks = (text) => text.replace(/\$\d+/g, '?')

const libraries = {
  postgresStore: () => {
    const pool = pgPool()
    return {
      store: (table) => postgresStore(pool, options(table)),
      write: (db, l, id) => db.query(insert(l), [id, 10.3]),
      hand: {
        claim: (t, id, token) => pool.query(claimSql(t), [id, token]),
        async transaction(work) {
          const client = await pool.connect()
          try {
            await client.query('BEGIN')
            const result = await work(client)
            await client.query('COMMIT')
            return result
          } catch (error) {
            await client.query('ROLLBACK')
            throw error
          } finally {
            client.release()
          }
        },
        done: async (client, t, id, token) => (await client.query(doneSql(t), [id, token])).rowCount,
        duplicate,
      },
    }
  },
  drizzleStore: () => {
    const db = drizzle(pgPool())
    const raw = drizzleSql.raw
    return {
      store: (table) => drizzleStore(db, options(table)),
      write: (tx, l, id) => tx.execute(drizzleSql`INSERT INTO ${raw(l)} (event_id, amount) VALUES (${id}, ${10.3})`),
      hand: {
        claim: (t, id, token) =>
          db.execute(
            drizzleSql`INSERT INTO ${raw(t)} (event_id, token, expires_at) VALUES (${id}, ${token}, now() + interval '5 minutes')`,
          ),
        transaction: (work) => db.transaction(work),
        done: async (tx, t, id, token) =>
          (
            await tx.execute(
              drizzleSql`UPDATE ${raw(t)} SET token = NULL, expires_at = now() + interval '73 hours' WHERE event_id = ${id} AND token = ${token} AND expires_at > now()`,
            )
          ).rowCount,
        duplicate,
      },
    }
  },
  kyselyStore: () => {
    // Kysely's destroy() ends its pool.
    const db = new Kysely({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: POOL }) }) })
    closers.push(() => db.destroy())
    const raw = kyselySql.raw
    return {
      store: (table) => kyselyStore(db, { ...options(table), maxConcurrentEvents: POOL - 1 }),
      write: (trx, l, id) => kyselySql`INSERT INTO ${raw(l)} (event_id, amount) VALUES (${id}, ${10.3})`.execute(trx),
      hand: {
        claim: (t, id, token) =>
          kyselySql`INSERT INTO ${raw(t)} (event_id, token, expires_at) VALUES (${id}, ${token}, now() + interval '5 minutes')`.execute(
            db,
          ),
        transaction: (work) => db.transaction().execute(work),
        done: async (trx, t, id, token) =>
          Number(
            (
              await kyselySql`UPDATE ${raw(t)} SET token = NULL, expires_at = now() + interval '73 hours' WHERE event_id = ${id} AND token = ${token} AND expires_at > now()`.execute(
                trx,
              )
            ).numAffectedRows,
          ),
        duplicate,
      },
    }
  },
  knexStore: () => {
    const db = knex({ client: 'pg', connection: url, pool: { min: 0, max: POOL } })
    closers.push(() => db.destroy())
    return {
      store: (table) => knexStore(db, options(table)),
      write: (trx, l, id) => trx.raw(`INSERT INTO ${l} (event_id, amount) VALUES (?, ?)`, [id, 10.3]),
      hand: {
        claim: (t, id, token) => db.raw(questionMarks(claimSql(t)), [id, token]),
        transaction: (work) => db.transaction(work),
        done: async (trx, t, id, token) => (await trx.raw(questionMarks(doneSql(t)), [id, token])).rowCount,
        duplicate,
      },
    }
  },
  typeormStore: async () => {
    const dataSource = new DataSource({ type: 'postgres', url, poolSize: POOL })
    await dataSource.initialize()
    closers.push(() => dataSource.destroy())
    return {
      store: (table) => typeormStore(dataSource, options(table)),
      write: (m, l, id) => m.query(insert(l), [id, 10.3]),
      hand: {
        claim: (t, id, token) => dataSource.query(claimSql(t), [id, token]),
        transaction: (work) => dataSource.transaction(work),
        // EntityManager.query answers an UPDATE with [rows, count].
        done: async (m, t, id, token) => (await m.query(doneSql(t), [id, token]))[1],
        duplicate,
      },
    }
  },
  postgresJsStore: () => {
    const sql = postgres(url, { max: POOL, onnotice: () => {} })
    closers.push(() => sql.end())
    return {
      store: (table) => postgresJsStore(sql, options(table)),
      write: (tx, l, id) => tx`INSERT INTO ${tx(l)} (event_id, amount) VALUES (${id}, ${10.3})`,
      hand: {
        claim: (t, id, token) =>
          sql`INSERT INTO ${sql(t)} (event_id, token, expires_at) VALUES (${id}, ${token}, now() + interval '5 minutes')`,
        transaction: (work) => sql.begin(work),
        done: async (tx, t, id, token) =>
          (
            await tx`UPDATE ${tx(t)} SET token = NULL, expires_at = now() + interval '73 hours' WHERE event_id = ${id} AND token = ${token} AND expires_at > now()`
          ).count,
        duplicate,
      },
    }
  },
  prismaStore: () => {
    const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max: POOL }) })
    closers.push(() => prisma.$disconnect())
    return {
      store: (table) => prismaStore(prisma, options(table)),
      write: (tx, l, id) => tx.$executeRawUnsafe(insert(l), id, 10.3),
      hand: {
        claim: (t, id, token) => prisma.$executeRawUnsafe(claimSql(t), id, token),
        transaction: (work) => prisma.$transaction(work, { timeout: 60_000 }),
        done: (tx, t, id, token) => tx.$executeRawUnsafe(doneSql(t), id, token),
        duplicate,
      },
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

/** pg_stat_statements' calls since `start` (which resets it), by the statement's first word and its table. */
async function statementCounter() {
  try {
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')
    await admin.query('SELECT pg_stat_statements_reset()')
  } catch {
    return undefined
  }
  const kindOf = (query) => {
    const word = (/^\s*(\w+)/.exec(query)?.[1] ?? '?').toUpperCase()
    if (word !== 'INSERT' && word !== 'UPDATE' && word !== 'DELETE' && word !== 'SELECT') return word
    return `${word} ${/_ledger\b/.test(query) ? 'ledger' : /bench_/.test(query) ? 'events' : 'other'}`
  }
  return {
    start: () => admin.query('SELECT pg_stat_statements_reset()'),
    async read() {
      const { rows } = await admin.query(
        "SELECT query, calls FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%'",
      )
      const kinds = {}
      let total = 0
      for (const { query, calls } of rows) {
        const kind = kindOf(query)
        kinds[kind] = (kinds[kind] ?? 0) + Number(calls)
        total += Number(calls)
      }
      return { total, kinds }
    },
  }
}

const version = (await admin.query('SHOW server_version')).rows[0].server_version
await bindingRounds({
  libraries,
  database: {
    title: `PostgreSQL ${version}`,
    async setup(label) {
      const table = `bench_${runId}_${label}`
      const ledger = `${table}_ledger`
      tables.push(table, ledger)
      await admin.query(`${createTableSql(table)};\n${expiryIndexSql(table)}`)
      await admin.query(`ALTER TABLE ${table} ADD COLUMN body_digest text`)
      await admin.query(`CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL, amount numeric)`)
      return { table, ledger }
    },
    statements: await statementCounter(),
    async close() {
      for (const table of tables) await admin.query(`DROP TABLE IF EXISTS ${table}`)
      for (const close of closers.reverse()) await close()
      server?.stop()
    },
  },
  target:
    'Target (issue 48): each binding ≤ 1.15x postgresStore in CPU per handled event; "CPU vs own by hand" set beside postgresStore\'s own is what the binding adds to its library.',
})
