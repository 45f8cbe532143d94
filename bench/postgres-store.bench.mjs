// postgresStore against hand-written SQL measured in the same run, on one PostgreSQL:
// - claim + complete per new event: the store (INSERT ... ON CONFLICT DO UPDATE ... WHERE lease ran out, then the
//   token-checked UPDATE to done) against INSERT ... ON CONFLICT DO NOTHING plus an unchecked UPDATE;
// - claim + a handler's write + done marker in one transaction: the store's `transaction` (BEGIN on first use of
//   context.db, token-checked UPDATE, COMMIT) against the same statements written by hand.
// Sequential (one event at a time) and 16 at a time; several rounds, variants taking turns chunk by chunk; medians.
// Uses DATABASE_URL, or starts its own PostgreSQL (scripts/postgres-server.mjs). Run: pnpm bench postgres-store
import { DEFAULT_RETENTION_MS } from '@payhooks/core'
import { bodyDigestColumnSql, createTableSql, expiryIndexSql, postgresStore } from '@payhooks/postgres'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'

const ROUNDS = 7
const SEQUENTIAL_EVENTS = 1_000
const CONCURRENT_EVENTS = 4_000
const CONCURRENCY = 16
const LEASE_MS = 900_000

const server = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => server?.stop())
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? server.url, max: CONCURRENCY + 4 })
const runId = Date.now().toString(36)
const tables = []

async function freshTables(name) {
  const table = `bench_${runId}_${name}_${tables.length}`
  const ledger = `${table}_ledger`
  tables.push(table, ledger)
  // The store's table as it makes it (with 004's body_digest and 012's expiry index, or without 012 to price that
  // index); the hand-written one, bare.
  if (name.startsWith('postgresstore')) {
    for (const ddl of [createTableSql(table), bodyDigestColumnSql(table)]) await pool.query(ddl)
    if (name === 'postgresstore') await pool.query(expiryIndexSql(table))
  } else {
    await pool.query(`CREATE TABLE ${table} (event_id text PRIMARY KEY, token text, expires_at timestamptz NOT NULL)`)
  }
  await pool.query(`CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL, amount numeric)`)
  return { table, ledger }
}

/** What one would write without payhooks: claim if absent, then mark done, no owner check. */
function handWritten(table, ledger) {
  let counter = 0
  const claim = async (eventId) => {
    const token = `b.${++counter}`
    const { rowCount } = await pool.query(
      `INSERT INTO ${table} (event_id, token, expires_at) VALUES ($1, $2, now() + $3::float8 * interval '1 millisecond') ON CONFLICT DO NOTHING`,
      [eventId, token, LEASE_MS],
    )
    if (rowCount !== 1) throw new Error('unexpected duplicate')
    return token
  }
  const done = `UPDATE ${table} SET token = NULL, expires_at = now() + $2::float8 * interval '1 millisecond' WHERE event_id = $1`
  return {
    async claimComplete(eventId) {
      await claim(eventId)
      await pool.query(done, [eventId, DEFAULT_RETENTION_MS])
    },
    async inTransaction(eventId) {
      await claim(eventId)
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await client.query(`INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`, [eventId, 10.3])
        await client.query(done, [eventId, DEFAULT_RETENTION_MS])
        await client.query('COMMIT')
      } finally {
        client.release()
      }
    },
  }
}

function withStore(table, ledger) {
  const store = postgresStore(pool, { table, createTable: false, sweepIntervalMs: 0 })
  const claim = async (eventId) => {
    const result = await store.claim(eventId, LEASE_MS)
    if (result.status !== 'claimed') throw new Error(`unexpected ${result.status}`)
    return result.token
  }
  return {
    async claimComplete(eventId) {
      const token = await claim(eventId)
      if (!(await store.complete(eventId, token))) throw new Error('not completed')
    },
    async inTransaction(eventId) {
      const token = await claim(eventId)
      const outcome = await store.transaction(eventId, token, async ({ db }) => {
        await db.query(`INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`, [eventId, 10.3])
        return true
      })
      if (outcome !== 'committed') throw new Error(`unexpected ${outcome}`)
    },
  }
}

const variants = { 'hand-written SQL': handWritten, postgresStore: withStore, 'postgresStore without 012': withStore }
const names = Object.keys(variants)

async function pooled(count, concurrency, task) {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++)
    }),
  )
}

const measures = {
  'claim+complete µs': { total: SEQUENTIAL_EVENTS, chunk: 10, concurrency: 1, op: 'claimComplete', perEvent: true },
  [`claim+complete/s c=${CONCURRENCY}`]: {
    total: CONCURRENT_EVENTS,
    chunk: 400,
    concurrency: CONCURRENCY,
    op: 'claimComplete',
  },
  'in transaction µs': { total: SEQUENTIAL_EVENTS, chunk: 10, concurrency: 1, op: 'inTransaction', perEvent: true },
  [`in transaction/s c=${CONCURRENCY}`]: {
    total: CONCURRENT_EVENTS,
    chunk: 400,
    concurrency: CONCURRENCY,
    op: 'inTransaction',
  },
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const results = Object.fromEntries(
  names.map((name) => [name, Object.fromEntries(Object.keys(measures).map((m) => [m, []]))]),
)

for (let round = -1; round < ROUNDS; round++) {
  for (const [measure, { total, chunk, concurrency, op, perEvent }] of Object.entries(measures)) {
    const runs = []
    for (const name of names) {
      const { table, ledger } = await freshTables(name.replace(/\W/g, '_').toLowerCase())
      runs.push(variants[name](table, ledger))
    }
    const elapsed = names.map(() => 0)
    for (let from = 0, turn = 0; from < total; from += chunk, turn++) {
      for (let k = 0; k < names.length; k++) {
        const v = (k + turn + round + names.length) % names.length
        const to = Math.min(from + chunk, total)
        const start = performance.now()
        await pooled(to - from, concurrency, (i) => runs[v][op](`evt_${round}_${from + i}`))
        elapsed[v] += performance.now() - start
      }
    }
    if (round < 0) continue // warm-up
    for (const [v, name] of names.entries()) {
      results[name][measure].push(perEvent ? (elapsed[v] * 1000) / total : total / (elapsed[v] / 1000))
    }
  }
}

const base = names[0]
const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const table = names.map((name) => {
  const row = { variant: name }
  for (const [measure, { perEvent }] of Object.entries(measures)) {
    const value = median(results[name][measure])
    const ratio = perEvent ? value / median(results[base][measure]) : median(results[base][measure]) / value
    row[measure] = `${fmt(value, perEvent ? 1 : 0)} (${fmt(ratio, 2)}x)`
  }
  return row
})
const version = (await pool.query('SHOW server_version')).rows[0].server_version
console.log(
  `node ${process.version}, PostgreSQL ${version}, ${ROUNDS} rounds (medians); (Nx) = cost against hand-written SQL, lower is better`,
)
console.table(table)
console.log(
  'claim+complete: INSERT ... ON CONFLICT, then the done marker. in transaction: the claim, then BEGIN, one INSERT of the\n' +
    "handler's, the done marker's UPDATE and COMMIT on one connection. Target: postgresStore within 1.3x.",
)

for (const name of tables) await pool.query(`DROP TABLE IF EXISTS ${name}`)
await pool.end()
server?.stop()
