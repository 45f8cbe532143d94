// What mysqlStore costs over hand-written SQL on the same MySQL (issue 48): webhooks.receive() of a signed
// transaction_settled whose handler inserts one row through context.db, 16 in flight, on mysqlStore and on a
// hand-written store doing the least the promise needs (an INSERT claim, then on one pooled connection START
// TRANSACTION, the handler's INSERT, an UPDATE marking the event done if the claim holds, COMMIT). CPU of this process
// per handled event (process.cpuUsage: the receiver, the store, mysql2), wall time for scale, and statements per
// event from the server's own count (SHOW GLOBAL STATUS 'Questions'); rounds in alternating order, medians of
// per-round ratios against the hand-written store. Uses MYSQL_URL, or starts its own MariaDB.
// Run: pnpm bench mysql-store (or ROUNDS=9 DELIVERIES=2000 node --expose-gc bench/mysql-store.bench.mjs)
import { createWebhooks } from '@payhooks/core'
import { createTableSql, mysqlStore } from '@payhooks/mysql'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import mysql from 'mysql2/promise'
import { startMariadb } from '../scripts/mariadb-server.mjs'

const ROUNDS = Number(process.env.ROUNDS ?? 7)
const DELIVERIES = Number(process.env.DELIVERIES ?? 1_500)
const CONCURRENCY = 16
const POOL = CONCURRENCY + 4
const SECRET = 'whsec_bench_mysql'

const server = process.env.MYSQL_URL ? undefined : await startMariadb()
process.on('exit', () => server?.stop())
const url = process.env.MYSQL_URL ?? server.url
const runId = Date.now().toString(36)
const tables = []
const admin = mysql.createPool({ uri: url, connectionLimit: 2 })
const pool = mysql.createPool({ uri: url, connectionLimit: POOL })

/** The hand-written store: the same table and statements, nothing else (no fences, digests or checks). */
function handWritten(table) {
  let counter = 0
  const t = `\`${table}\``
  return {
    retentionMs: 73 * 3_600_000,
    async claim(eventId, leaseMs) {
      const token = `hand.${++counter}`
      try {
        await pool.query(
          `INSERT INTO ${t} (event_id, token, expires_at) VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)`,
          [eventId, token, leaseMs * 1000],
        )
        return { status: 'claimed', token }
      } catch (error) {
        if (error.errno !== 1062) throw error
        return { status: 'processing' }
      }
    },
    async extend() {
      return true
    },
    async complete(eventId, token) {
      const [r] = await pool.query(`UPDATE ${t} SET token = NULL WHERE event_id = ? AND token = ?`, [eventId, token])
      return r.affectedRows === 1
    },
    async release(eventId, token) {
      await pool.query(`DELETE FROM ${t} WHERE event_id = ? AND token = ?`, [eventId, token])
      return true
    },
    async transaction(eventId, token, work) {
      const connection = await pool.getConnection()
      try {
        await connection.query('START TRANSACTION')
        if (!(await work({ db: connection }))) {
          await connection.query('ROLLBACK')
          return 'rolled_back'
        }
        const [r] = await connection.query(
          `UPDATE ${t} SET token = NULL, expires_at = UTC_TIMESTAMP(6) + INTERVAL 73 HOUR WHERE event_id = ? AND token = ? AND expires_at > UTC_TIMESTAMP(6)`,
          [eventId, token],
        )
        if (r.affectedRows !== 1) {
          await connection.query('ROLLBACK')
          return 'lost'
        }
        await connection.query('COMMIT')
        return 'committed'
      } finally {
        connection.release()
      }
    },
  }
}

const variants = {
  'hand-written': (table) => handWritten(table),
  mysqlStore: (table) =>
    mysqlStore(pool, { table, createTable: false, sweepIntervalMs: 0, logger: { warn() {}, error() {} } }),
}
const names = Object.keys(variants)

/** A receiver of `name` on fresh tables, its handler writing one ledger row through context.db. */
async function receiver(name, label) {
  const table = `bench_${runId}_${label}`
  const ledger = `${table}_ledger`
  tables.push(table, `${table}_fences`, ledger)
  await admin.query(createTableSql(table))
  await admin.query(
    `CREATE TABLE ${ledger} (id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(255) NOT NULL, amount DECIMAL(12, 2))`,
  )
  const store = variants[name](table)
  await store.init?.()
  const webhooks = createWebhooks({ secret: SECRET, store, checkAtStart: false })
  webhooks.on('transaction_settled', async (event, { db }) => {
    await db.query(`INSERT INTO ${ledger} (event_id, amount) VALUES (?, ?)`, [event.event_id, 10.3])
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
      return { method: 'POST', body, getHeader: (header) => headers[header] }
    }),
  )

const questions = async () => Number((await admin.query("SHOW GLOBAL STATUS LIKE 'Questions'"))[0][0].Value)

async function run(webhooks, batch) {
  globalThis.gc?.()
  let next = 0
  const asked = await questions()
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
  const wallUs = ((performance.now() - wall) * 1000) / batch.length
  // Less the one SHOW STATUS of this count itself.
  const statements = ((await questions()) - asked - 1) / batch.length
  return { cpuUs: (used.user + used.system) / batch.length, wallUs, statements }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const results = Object.fromEntries(names.map((name) => [name, { cpu: [], wall: [], ratio: [], statements: [] }]))
for (let round = -1; round < ROUNDS; round++) {
  const figures = {}
  const order = round % 2 ? names : [...names].reverse()
  for (const name of order) {
    const label = `${name.replace(/\W/g, '').toLowerCase()}_${round + 1}`
    const webhooks = await receiver(name, label)
    figures[name] = await run(webhooks, await deliveries(label, round < 0 ? 300 : DELIVERIES))
    await webhooks.close()
  }
  if (round < 0) continue // warm-up
  for (const name of names) {
    results[name].cpu.push(figures[name].cpuUs)
    results[name].wall.push(figures[name].wallUs)
    results[name].statements.push(figures[name].statements)
    results[name].ratio.push(figures[name].cpuUs / figures['hand-written'].cpuUs)
  }
}

const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const range = (values) => `${fmt(Math.min(...values), 2)}–${fmt(Math.max(...values), 2)}`
const [[{ version }]] = await admin.query('SELECT VERSION() AS version')
console.log(
  `node ${process.version}, ${version}, ${ROUNDS} rounds of ${DELIVERIES} deliveries, ${CONCURRENCY} in flight; medians (per-round ratio range in brackets)`,
)
console.table(
  names.map((name) => ({
    store: name,
    'CPU µs/event': fmt(median(results[name].cpu), 1),
    'CPU vs hand-written': `${fmt(median(results[name].ratio), 2)}x (${range(results[name].ratio)})`,
    'wall µs/event': fmt(median(results[name].wall), 1),
    'statements/event': fmt(median(results[name].statements), 2),
  })),
)
console.log('Target (issue 48): mysqlStore ≤ 1.3x hand-written SQL in CPU per handled event.')

for (const table of tables) await admin.query(`DROP TABLE IF EXISTS \`${table}\``)
await pool.end()
await admin.end()
server?.stop()
