// What binding the transaction engine to the app's library costs on MySQL (issue 48): webhooks.receive() of a signed
// transaction_settled whose handler inserts one row through context.db, 16 in flight, on mysqlStore (mysql2's own
// pool) and on each binding of @payhooks/mysql: drizzleStore, kyselyStore, knexStore, typeormStore, sequelizeStore,
// prismaStore. Each handler writes with its library's cheapest parameterized statement (mysql2's query, Drizzle's
// execute(sql``), Kysely's sql``.execute, Knex's raw, TypeORM's query, Sequelize's query with replacements, Prisma's
// $executeRawUnsafe on the client of test/fixtures/prisma-mysql, generated first). Beside each binding, the same
// library by hand (see binding-rounds.mjs): the binding over it is what is ours. Statements per event from the
// server's own counts (SHOW GLOBAL STATUS: Questions, and the Com_ counters by kind). Uses MYSQL_URL, or starts its
// own MariaDB (scripts/mariadb-server.mjs).
// Run: pnpm bench mysql-bindings (or ROUNDS=9 DELIVERIES=2000 node --expose-gc bench/mysql-bindings.bench.mjs;
// ONLY=knexStore,sequelizeStore for some; HAND=0 without the by-hand rows)
import { createTableSql, mysqlStore } from '@payhooks/mysql'
import { drizzleStore } from '@payhooks/mysql/drizzle'
import { knexStore } from '@payhooks/mysql/knex'
import { kyselyStore } from '@payhooks/mysql/kysely'
import { prismaStore } from '@payhooks/mysql/prisma'
import { sequelizeStore } from '@payhooks/mysql/sequelize'
import { typeormStore } from '@payhooks/mysql/typeorm'
import { PrismaMariaDb } from '@prisma/adapter-mariadb'
import { sql as drizzleSql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/mysql2'
import knex from 'knex'
import { Kysely, sql as kyselySql, MysqlDialect } from 'kysely'
import { createPool } from 'mysql2'
import mysql from 'mysql2/promise'
import { Sequelize } from 'sequelize'
import { DataSource } from 'typeorm'
import { startMariadb } from '../scripts/mariadb-server.mjs'
import { generatePrismaClients } from '../scripts/prisma-generate.mjs'
import { bindingRounds, POOL, quiet } from './binding-rounds.mjs'

generatePrismaClients()
const { PrismaClient } = await import('../test/fixtures/prisma-mysql/generated/prisma/client.js')

const server = process.env.MYSQL_URL ? undefined : await startMariadb()
process.on('exit', () => server?.stop())
const url = process.env.MYSQL_URL ?? server.url
const runId = Date.now().toString(36)
const tables = []
const admin = mysql.createPool({ uri: url, connectionLimit: 2 })
const closers = [() => admin.end()]

const options = (table) => ({ table, createTable: false, sweepIntervalMs: 0, logger: quiet })
const insert = (ledger) => `INSERT INTO ${ledger} (event_id, amount) VALUES (?, ?)`
// The by-hand stores' claim (a 5-minute lease) and done marker (kept 73 hours, if the lease still holds).
const claimSql = (t) =>
  `INSERT INTO ${t} (event_id, token, expires_at) VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL 5 MINUTE)`
const doneSql = (t) =>
  `UPDATE ${t} SET token = NULL, expires_at = UTC_TIMESTAMP(6) + INTERVAL 73 HOUR WHERE event_id = ? AND token = ? AND expires_at > UTC_TIMESTAMP(6)`
const duplicate = (error) =>
  (error?.errno ?? error?.original?.errno ?? error?.parent?.errno) === 1062 ||
  /1062|Duplicate entry/.test(String(error?.message))

const libraries = {
  mysqlStore: () => {
    const pool = mysql.createPool({ uri: url, connectionLimit: POOL })
    closers.push(() => pool.end())
    return {
      store: (table) => mysqlStore(pool, options(table)),
      write: (db, l, id) => db.query(insert(l), [id, 10.3]),
      hand: {
        claim: (t, id, token) => pool.query(claimSql(t), [id, token]),
        async transaction(work) {
          const connection = await pool.getConnection()
          try {
            await connection.query('START TRANSACTION')
            const result = await work(connection)
            await connection.query('COMMIT')
            return result
          } catch (error) {
            await connection.query('ROLLBACK')
            throw error
          } finally {
            connection.release()
          }
        },
        done: async (connection, t, id, token) => (await connection.query(doneSql(t), [id, token]))[0].affectedRows,
        duplicate,
      },
    }
  },
  drizzleStore: () => {
    const pool = mysql.createPool({ uri: url, connectionLimit: POOL })
    closers.push(() => pool.end())
    const db = drizzle(pool)
    const raw = drizzleSql.raw
    return {
      store: (table) => drizzleStore(db, options(table)),
      write: (tx, l, id) => tx.execute(drizzleSql`INSERT INTO ${raw(l)} (event_id, amount) VALUES (${id}, ${10.3})`),
      hand: {
        claim: (t, id, token) =>
          db.execute(
            drizzleSql`INSERT INTO ${raw(t)} (event_id, token, expires_at) VALUES (${id}, ${token}, UTC_TIMESTAMP(6) + INTERVAL 5 MINUTE)`,
          ),
        transaction: (work) => db.transaction(work),
        done: async (tx, t, id, token) =>
          (
            await tx.execute(
              drizzleSql`UPDATE ${raw(t)} SET token = NULL, expires_at = UTC_TIMESTAMP(6) + INTERVAL 73 HOUR WHERE event_id = ${id} AND token = ${token} AND expires_at > UTC_TIMESTAMP(6)`,
            )
          )[0].affectedRows,
        duplicate,
      },
    }
  },
  kyselyStore: () => {
    // Kysely's destroy() ends its pool.
    const db = new Kysely({ dialect: new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: POOL }) }) })
    closers.push(() => db.destroy())
    const raw = kyselySql.raw
    return {
      store: (table) => kyselyStore(db, { ...options(table), maxConcurrentEvents: POOL - 1 }),
      write: (trx, l, id) => kyselySql`INSERT INTO ${raw(l)} (event_id, amount) VALUES (${id}, ${10.3})`.execute(trx),
      hand: {
        claim: (t, id, token) =>
          kyselySql`INSERT INTO ${raw(t)} (event_id, token, expires_at) VALUES (${id}, ${token}, UTC_TIMESTAMP(6) + INTERVAL 5 MINUTE)`.execute(
            db,
          ),
        transaction: (work) => db.transaction().execute(work),
        done: async (trx, t, id, token) =>
          Number(
            (
              await kyselySql`UPDATE ${raw(t)} SET token = NULL, expires_at = UTC_TIMESTAMP(6) + INTERVAL 73 HOUR WHERE event_id = ${id} AND token = ${token} AND expires_at > UTC_TIMESTAMP(6)`.execute(
                trx,
              )
            ).numAffectedRows,
          ),
        duplicate,
      },
    }
  },
  knexStore: () => {
    const db = knex({ client: 'mysql2', connection: url, pool: { min: 0, max: POOL } })
    closers.push(() => db.destroy())
    return {
      store: (table) => knexStore(db, options(table)),
      write: (trx, l, id) => trx.raw(insert(l), [id, 10.3]),
      hand: {
        claim: (t, id, token) => db.raw(claimSql(t), [id, token]),
        transaction: (work) => db.transaction(work),
        done: async (trx, t, id, token) => (await trx.raw(doneSql(t), [id, token]))[0].affectedRows,
        duplicate,
      },
    }
  },
  typeormStore: async () => {
    const dataSource = new DataSource({ type: 'mariadb', url, poolSize: POOL })
    await dataSource.initialize()
    closers.push(() => dataSource.destroy())
    return {
      store: (table) => typeormStore(dataSource, options(table)),
      write: (m, l, id) => m.query(insert(l), [id, 10.3]),
      hand: {
        claim: (t, id, token) => dataSource.query(claimSql(t), [id, token]),
        transaction: (work) => dataSource.transaction(work),
        done: async (m, t, id, token) => (await m.query(doneSql(t), [id, token])).affectedRows,
        duplicate,
      },
    }
  },
  sequelizeStore: () => {
    const sequelize = new Sequelize(url, { dialect: 'mysql', logging: false, pool: { max: POOL } })
    closers.push(() => sequelize.close())
    return {
      store: (table) => sequelizeStore(sequelize, options(table)),
      write: (transaction, l, id) => sequelize.query(insert(l), { replacements: [id, 10.3], transaction }),
      hand: {
        claim: (t, id, token) => sequelize.query(claimSql(t), { replacements: [id, token] }),
        transaction: (work) => sequelize.transaction(work),
        done: async (transaction, t, id, token) =>
          (await sequelize.query(doneSql(t), { replacements: [id, token], transaction }))[0].affectedRows,
        duplicate,
      },
    }
  },
  prismaStore: () => {
    const prisma = new PrismaClient({ adapter: new PrismaMariaDb(`${url}?connectionLimit=${POOL}`) })
    closers.push(() => prisma.$disconnect())
    return {
      store: (table) => prismaStore(prisma, { ...options(table), maxConcurrentEvents: POOL - 1 }),
      write: (tx, l, id) => tx.$executeRawUnsafe(insert(l), id, 10.3),
      hand: {
        claim: (t, id, token) => prisma.$executeRawUnsafe(claimSql(t), id, token),
        transaction: (work) => prisma.$transaction(work, { timeout: 60_000 }),
        done: (tx, t, id, token) => tx.$executeRawUnsafe(doneSql(t), id, token),
        duplicate,
      },
    }
  },
}

/** The server's counts since `start`: Questions in all, and the Com_ counters by kind. */
function statementCounter() {
  const counts = async () => {
    const [rows] = await admin.query(
      "SHOW GLOBAL STATUS WHERE Variable_name = 'Questions' OR Variable_name LIKE 'Com\\_%'",
    )
    return Object.fromEntries(rows.map((row) => [row.Variable_name, Number(row.Value)]))
  }
  let before = {}
  return {
    async start() {
      before = await counts()
    },
    async read() {
      const after = await counts()
      const kinds = {}
      for (const [name, value] of Object.entries(after)) {
        if (!name.startsWith('Com_') || name === 'Com_show_status' || value === before[name]) continue
        kinds[name.slice(4)] = value - (before[name] ?? 0)
      }
      // Less one SHOW GLOBAL STATUS of this count itself.
      return { total: after.Questions - before.Questions - 1, kinds }
    },
  }
}

const [[{ version }]] = await admin.query('SELECT VERSION() AS version')
await bindingRounds({
  libraries,
  database: {
    title: version,
    async setup(label) {
      const table = `bench_${runId}_${label}`
      const ledger = `${table}_ledger`
      tables.push(table, `${table}_fences`, ledger)
      await admin.query(createTableSql(table))
      await admin.query(
        `CREATE TABLE ${ledger} (id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(255) NOT NULL, amount DECIMAL(12, 2))`,
      )
      return { table, ledger }
    },
    statements: statementCounter(),
    async close() {
      for (const table of tables) await admin.query(`DROP TABLE IF EXISTS \`${table}\``)
      for (const close of closers.reverse()) await close()
      server?.stop()
    },
  },
  target:
    'Target (issue 48): each binding ≤ 1.15x mysqlStore in CPU per handled event; "CPU vs own by hand" set beside mysqlStore\'s own is what the binding adds to its library.',
})
