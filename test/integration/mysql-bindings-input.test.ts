// The bindings of @payhooks/mysql given the wrong object: a mysql2 pool where a library's object is expected,
// another database's, something without transactions, a closed one. Each fails at start-up (at the store's creation,
// or at init() and in the receiver's start check), with a message naming what it got and what it needs; never at the
// first event.
import { createWebhooks } from '@payhooks/core'
import { drizzleStore } from '@payhooks/mysql/drizzle'
import { knexStore } from '@payhooks/mysql/knex'
import { kyselyStore } from '@payhooks/mysql/kysely'
import { sequelizeStore } from '@payhooks/mysql/sequelize'
import { typeormStore } from '@payhooks/mysql/typeorm'
import { drizzle } from 'drizzle-orm/mysql2'
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres'
import knex from 'knex'
import { Kysely, MysqlDialect, PostgresDialect, sql } from 'kysely'
import mysqlCallbacks from 'mysql2'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { Sequelize } from 'sequelize'
import { DataSource } from 'typeorm'
import { describe, expect, it, vi } from 'vitest'
import { mysqlUrl } from '../fixtures/mysql.js'

const url = mysqlUrl()
const newPool = () => mysql.createPool({ uri: url, connectionLimit: 2 })
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
  await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0), { timeout: 10_000, interval: 20 })
  await webhooks.close()
  return lines.join('\n')
}

describe('drizzleStore (MySQL) given the wrong object', () => {
  it('refuses a mysql2 pool, Drizzle over PostgreSQL, something without transactions, and an ended pool, when made', async () => {
    const pool = newPool()
    expect(() => drizzleStore(wrong(pool))).toThrow(
      'drizzleStore: got a mysql2/promise Pool; it needs the database drizzle() of drizzle-orm/mysql2 returns over a mysql2 pool',
    )
    const pgPool = new pg.Pool({ connectionString: 'postgres://127.0.0.1:1/none' })
    expect(() => drizzleStore(wrong(drizzlePg(pgPool)))).toThrow(
      'drizzleStore: got a Drizzle database of PgDialect; it needs the database drizzle() of drizzle-orm/mysql2',
    )
    await pgPool.end()
    expect(() => drizzleStore(wrong({ execute() {}, $client: pool }))).toThrow(
      'drizzleStore: got a plain object; it needs the database drizzle()',
    )
    await pool.end()
    expect(() => drizzleStore(drizzle(pool))).toThrow(
      'drizzleStore: the mysql2 pool under the Drizzle database was ended (pool.end()); it needs a live pool',
    )
  })
})

describe('kyselyStore (MySQL) given the wrong object', () => {
  it('refuses a mysql2 pool, Kysely on PostgreSQL, and something without transactions, when made', async () => {
    const pool = newPool()
    expect(() => kyselyStore(wrong(pool))).toThrow(
      'kyselyStore: got a mysql2/promise Pool; it needs a Kysely instance on MySQL',
    )
    const pgPool = new pg.Pool({ connectionString: 'postgres://127.0.0.1:1/none' })
    const onPostgres = new Kysely({ dialect: new PostgresDialect({ pool: pgPool }) })
    expect(() => kyselyStore(onPostgres)).toThrow(
      "kyselyStore: got a Kysely; it needs a Kysely instance on MySQL: kyselyStore(new Kysely<DB>({ dialect: new MysqlDialect({ pool }) })); its dialect's adapter is a PostgresAdapter",
    )
    await onPostgres.destroy()
    expect(() => kyselyStore(wrong({ executeQuery() {} }))).toThrow('kyselyStore: got a plain object; it needs')
    await pool.end()
  })

  it('refuses a destroyed Kysely at init() and in the start check, naming it', async () => {
    const db = new Kysely({ dialect: new MysqlDialect({ pool: mysqlCallbacks.createPool({ uri: url }) }) })
    await sql`SELECT 1`.execute(db)
    await db.destroy()
    const store = kyselyStore(db)
    await expect(store.init()).rejects.toThrow(
      'kyselyStore: the Kysely instance was destroyed (db.destroy()), or its pool ended; it needs a live one',
    )
    expect(await startCheckLines(store)).toContain('the Kysely instance was destroyed')
  })
})

describe('knexStore (MySQL) given the wrong object', () => {
  it("refuses a mysql2 pool, Knex's client instead of Knex, Knex on PostgreSQL, and a destroyed Knex, when made", async () => {
    const pool = newPool()
    expect(() => knexStore(wrong(pool))).toThrow(
      "knexStore: got a mysql2/promise Pool; it needs a Knex instance on MySQL: knexStore(knex({ client: 'mysql2', connection }))",
    )
    await pool.end()
    const db = knex({ client: 'mysql2', connection: url })
    expect(() => knexStore(wrong(db.client))).toThrow(
      'knexStore: got a Client_MySQL2; it needs a Knex instance on MySQL',
    )
    const onPostgres = knex({ client: 'pg', connection: 'postgres://127.0.0.1:1/none' })
    expect(() => knexStore(onPostgres)).toThrow(
      'knexStore: got a Knex instance on postgresql; it needs a Knex instance on MySQL',
    )
    await onPostgres.destroy()
    await db.destroy()
    expect(() => knexStore(db)).toThrow(
      'knexStore: the Knex instance has no pool (knex.destroy() was called); it needs a live one',
    )
  })
})

describe('typeormStore (MySQL) given the wrong object', () => {
  it('refuses a mysql2 pool, an EntityManager, and a PostgreSQL DataSource when made; one not initialized at init() and in the start check', async () => {
    const pool = newPool()
    expect(() => typeormStore(wrong(pool))).toThrow(
      "typeormStore: got a mysql2/promise Pool; it needs a TypeORM DataSource of type 'mysql' or 'mariadb'",
    )
    await pool.end()
    const dataSource = new DataSource({ type: 'mariadb', url })
    expect(() => typeormStore(wrong(dataSource.manager))).toThrow(
      "typeormStore: got an EntityManager; it needs a TypeORM DataSource of type 'mysql' or 'mariadb': typeormStore(new DataSource({ type: 'mysql', ... })), not one of its EntityManagers",
    )
    expect(() => typeormStore(new DataSource({ type: 'postgres', url: 'postgres://127.0.0.1:1/none' }))).toThrow(
      "typeormStore: got a DataSource of type 'postgres'; it needs a TypeORM DataSource of type 'mysql' or 'mariadb'",
    )
    const store = typeormStore(dataSource)
    await expect(store.init()).rejects.toThrow(
      'typeormStore: the DataSource is not initialized (or was destroyed); it needs await dataSource.initialize() before the receiver starts',
    )
    expect(await startCheckLines(store)).toContain('the DataSource is not initialized')
  })
})

describe('sequelizeStore given the wrong object', () => {
  it('refuses a mysql2 pool, Sequelize on PostgreSQL, something without transactions, and a closed Sequelize, when made', async () => {
    const pool = newPool()
    expect(() => sequelizeStore(wrong(pool))).toThrow(
      'sequelizeStore: got a mysql2/promise Pool; it needs a Sequelize instance on MySQL or MariaDB',
    )
    await pool.end()
    const onPostgres = new Sequelize('postgres://127.0.0.1:1/none', { dialect: 'postgres', logging: false })
    expect(() => sequelizeStore(onPostgres)).toThrow(
      'sequelizeStore: got a Sequelize instance on postgres; it needs a Sequelize instance on MySQL or MariaDB',
    )
    await onPostgres.close()
    expect(() => sequelizeStore(wrong({ query() {}, getDialect: () => 'mysql' }))).toThrow(
      'sequelizeStore: got a plain object; it needs a Sequelize instance on MySQL or MariaDB',
    )
    const sequelize = new Sequelize(url, { dialect: 'mysql', logging: false })
    await sequelize.close()
    expect(() => sequelizeStore(sequelize)).toThrow(
      'sequelizeStore: the Sequelize instance was closed (sequelize.close()); it needs a live one',
    )
  })

  it('refuses a Sequelize closed after the store was made, at init() and in the start check', async () => {
    const sequelize = new Sequelize(url, { dialect: 'mysql', logging: false })
    const store = sequelizeStore(sequelize)
    await sequelize.close()
    await expect(store.init()).rejects.toThrow('sequelizeStore: the Sequelize instance was closed')
    expect(await startCheckLines(store)).toContain('the Sequelize instance was closed')
  })
})
