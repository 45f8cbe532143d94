// The bindings of @payhooks/postgres given the wrong object: a pg.Pool where a library's object is expected, another
// library's or database's, a closed pool or client, a data source not initialized. Each fails at start-up (at the
// store's creation, or at init() and in the receiver's start check), with a message naming what it got and what it
// needs; never at the first event.
import { createWebhooks } from '@payhooks/core'
import { drizzleStore } from '@payhooks/postgres/drizzle'
import { knexStore } from '@payhooks/postgres/knex'
import { kyselyStore } from '@payhooks/postgres/kysely'
import { postgresJsStore } from '@payhooks/postgres/postgres-js'
import { typeormStore } from '@payhooks/postgres/typeorm'
import { drizzle } from 'drizzle-orm/node-postgres'
import knex from 'knex'
import { Kysely, MysqlDialect, PostgresDialect } from 'kysely'
import pg from 'pg'
import postgres from 'postgres'
import { DataSource } from 'typeorm'
import { describe, expect, it, vi } from 'vitest'
import { databaseUrl } from '../fixtures/postgres.js'

const url = databaseUrl()
const newPool = () => new pg.Pool({ connectionString: url, max: 2 })
// biome-ignore lint/suspicious/noExplicitAny: the wrong objects are the point
const wrong = (value: unknown) => value as any

/** The lines a receiver's start check logs for `store` (its health checks, run once soon after it is made). */
async function startCheckLines(store: Parameters<typeof createWebhooks>[0]['store']) {
  const lines: string[] = []
  const logger = {
    error: (...args: unknown[]) => lines.push(args.map(String).join(' ')),
    warn: () => {},
    info: () => {},
  }
  const webhooks = createWebhooks({ secret: 'whsec_input', store, logger })
  await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0), { timeout: 5000 })
  await webhooks.close()
  return lines.join('\n')
}

describe('drizzleStore given the wrong object', () => {
  it('refuses a pg.Pool, Drizzle over a single pg.Client, and something without transactions, when made', async () => {
    const pool = newPool()
    expect(() => drizzleStore(wrong(pool))).toThrow(
      'drizzleStore: got a pg.Pool; it needs the database drizzle() of drizzle-orm/node-postgres returns over a pg.Pool',
    )
    expect(() => drizzleStore(wrong(drizzle(new pg.Client(url))))).toThrow(
      'drizzleStore: got a Drizzle database with $client a pg.Client; it needs the database drizzle() of drizzle-orm/node-postgres returns over a pg.Pool',
    )
    expect(() => drizzleStore(wrong({ execute() {}, $client: pool }))).toThrow(
      'drizzleStore: got a plain object; it needs the database drizzle()',
    )
    await pool.end()
  })

  it('refuses Drizzle over an ended pool, when made', async () => {
    const pool = newPool()
    await pool.query('SELECT 1')
    await pool.end()
    expect(() => drizzleStore(drizzle(pool))).toThrow(
      'drizzleStore: the pg.Pool under the Drizzle database was ended (pool.end()); it needs a live pool',
    )
  })
})

describe('kyselyStore given the wrong object', () => {
  it('refuses a pg.Pool, Kysely on MySQL, and something without transactions, when made', async () => {
    const pool = newPool()
    expect(() => kyselyStore(wrong(pool))).toThrow(
      'kyselyStore: got a pg.Pool; it needs a Kysely instance on PostgreSQL',
    )
    const mysql = new Kysely({ dialect: new MysqlDialect({ pool: async () => wrong({}) }) })
    expect(() => kyselyStore(mysql)).toThrow(
      "kyselyStore: got a Kysely; it needs a Kysely instance on PostgreSQL: kyselyStore(new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })); its dialect's adapter is a MysqlAdapter",
    )
    expect(() => kyselyStore(wrong({ executeQuery() {} }))).toThrow('kyselyStore: got a plain object; it needs')
    await pool.end()
  })

  it('refuses a destroyed Kysely at init() and in the start check, naming it', async () => {
    const db = new Kysely({ dialect: new PostgresDialect({ pool: newPool() }) })
    await db.selectNoFrom((eb) => eb.val(1).as('one')).execute()
    await db.destroy()
    const store = kyselyStore(db, { table: 'never_made_kysely' })
    await expect(store.init()).rejects.toThrow(
      'kyselyStore: the Kysely instance was destroyed (db.destroy()), or its pool ended; it needs a live one',
    )
    expect(await startCheckLines(store)).toContain('the Kysely instance was destroyed')
  })
})

describe('knexStore given the wrong object', () => {
  it("refuses a pg.Pool, Knex's client instead of Knex, and a destroyed Knex, when made", async () => {
    const pool = newPool()
    expect(() => knexStore(wrong(pool))).toThrow(
      "knexStore: got a pg.Pool; it needs a Knex instance on PostgreSQL: knexStore(knex({ client: 'pg', connection }))",
    )
    const db = knex({ client: 'pg', connection: url })
    expect(() => knexStore(wrong(db.client))).toThrow(
      'knexStore: got a Client_PG; it needs a Knex instance on PostgreSQL',
    )
    await db.raw('SELECT 1')
    await db.destroy()
    expect(() => knexStore(db)).toThrow(
      'knexStore: the Knex instance has no pool (knex.destroy() was called); it needs a live one',
    )
    await pool.end()
  })
})

describe('typeormStore given the wrong object', () => {
  it('refuses a pg.Pool and an EntityManager when made, a DataSource not initialized at init() and in the start check', async () => {
    const pool = newPool()
    expect(() => typeormStore(wrong(pool))).toThrow(
      "typeormStore: got a pg.Pool; it needs a TypeORM DataSource of type 'postgres'",
    )
    const dataSource = new DataSource({ type: 'postgres', url, poolSize: 2 })
    expect(() => typeormStore(wrong(dataSource.manager))).toThrow(
      "typeormStore: got an EntityManager; it needs a TypeORM DataSource of type 'postgres': typeormStore(new DataSource({ type: 'postgres', ... })), not one of its EntityManagers",
    )
    const store = typeormStore(dataSource, { table: 'never_made_typeorm' })
    await expect(store.init()).rejects.toThrow(
      'typeormStore: the DataSource is not initialized (or was destroyed); it needs await dataSource.initialize() before the receiver starts',
    )
    expect(await startCheckLines(store)).toContain('the DataSource is not initialized')
    await pool.end()
  })
})

describe('postgresJsStore given the wrong object', () => {
  it('refuses a pg.Pool, the postgres function, a transaction, and a client that renames columns, when made', async () => {
    const pool = newPool()
    expect(() => postgresJsStore(wrong(pool))).toThrow(
      'postgresJsStore: got a pg.Pool; it needs a postgres.js client: postgresJsStore(postgres(url))',
    )
    expect(() => postgresJsStore(wrong(postgres))).toThrow(
      'postgresJsStore: got a function (Postgres); it needs a postgres.js client: postgresJsStore(postgres(url)) (postgres 3.4 or later: its begin, unsafe and reserve)',
    )
    const sql = postgres(url, { max: 2, onnotice: () => {} })
    await sql.begin(async (tx) => {
      expect(() => postgresJsStore(wrong(tx))).toThrow('postgresJsStore: got a function')
      expect(() => postgresJsStore(wrong(tx))).toThrow('not a transaction of it')
    })
    const camel = postgres(url, { max: 1, transform: postgres.camel })
    expect(() => postgresJsStore(camel)).toThrow(
      'postgresJsStore: got a postgres.js client with result transforms (transform: postgres.camel or the like)',
    )
    await Promise.all([sql.end(), camel.end(), pool.end()])
  })

  it('refuses an ended client at init() and in the start check, naming it', async () => {
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    await sql`SELECT 1`
    await sql.end()
    const store = postgresJsStore(sql, { table: 'never_made_postgres_js' })
    await expect(store.init()).rejects.toThrow(
      'postgresJsStore: the postgres.js client was ended (sql.end()); it needs a live one',
    )
    expect(await startCheckLines(store)).toContain('the postgres.js client was ended')
  })
})
