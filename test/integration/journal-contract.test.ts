// The journal contract of @payhooks/testing against the journals payhooks ships, each on its real backing.
import { createHash } from 'node:crypto'
import { type Journal, memoryJournal } from '@payhooks/core'
import { mysqlJournal } from '@payhooks/mysql'
import { redisJournal } from '@payhooks/redis'
import { journalContract } from '@payhooks/testing/journal-contract'
import { Cluster, Redis } from 'ioredis'
import mysql from 'mysql2/promise'
import { afterAll } from 'vitest'
import { mysqlUrl } from '../fixtures/mysql.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
const NODES = process.env.REDIS_CLUSTER_NODES
if (!REDIS_URL || !NODES) {
  throw new Error(
    'REDIS_URL and REDIS_CLUSTER_NODES are set by `pnpm test` (node scripts/test.mjs), which starts Redis',
  )
}
const KEY_PREFIX = 'payhooks-journal-contract:'

// One process: the instances of a fleet are one instance.
const memoryFleets = new Map<string, Journal>()
journalContract('memoryJournal', (namespace) => {
  const journal = memoryFleets.get(namespace) ?? memoryJournal()
  memoryFleets.set(namespace, journal)
  return journal
})

// Each instance on its own connection, as in separate processes.
const clients: (Redis | Cluster)[] = []
journalContract('redisJournal', (namespace) => {
  const client = new Redis(REDIS_URL)
  clients.push(client)
  return redisJournal(client, { ...UNHURRIED, keyPrefix: `${KEY_PREFIX}${namespace}:` })
})

const nodes = NODES.split(',').map((node) => {
  const [host, port] = node.split(':')
  return { host: host as string, port: Number(port) }
})
journalContract('redisJournal on a Redis Cluster', (namespace) => {
  const client = new Cluster(nodes)
  client.on('error', () => {})
  clients.push(client)
  return redisJournal(client, { ...UNHURRIED, keyPrefix: `${KEY_PREFIX}${namespace}:` })
})

afterAll(async () => {
  const admin = clients.find((client) => client instanceof Redis)
  const keys = admin ? await admin.keys(`${KEY_PREFIX}*`) : []
  if (admin && keys.length > 0) await admin.del(...keys)
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())))
})

// MariaDB (MySQL's SQL): each instance on its own pool, each namespace its own table.
const mysqlPools: mysql.Pool[] = []
const mysqlTables = new Set<string>()
journalContract('mysqlJournal', (namespace) => {
  const pool = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 3 })
  mysqlPools.push(pool)
  const table = `journal_${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`
  mysqlTables.add(table)
  return mysqlJournal(pool, { table })
})

afterAll(async () => {
  const [admin] = mysqlPools
  for (const table of mysqlTables) await admin?.query(`DROP TABLE IF EXISTS \`${table}\``)
  await Promise.all(mysqlPools.map((pool) => pool.end()))
})
