// The PostgreSQL store's retention sweep at volume (issue 39): a store table of ROWS rows (default 1,000,000; the
// issue's 10,000,000 with ROWS=10000000), the older half past its expiry, swept
// - the old way: one `DELETE ... WHERE expires_at < now` over the table without an index on expires_at, and
// - the store's way: `store.sweep()`, batches of SWEEP_BATCH (default 5,000) by the expiry index of migration 012,
//   each its own short statement,
// while a claimer claims and completes events one after another, half of them events whose done marker is among the
// expired rows (an old event resent): its worst and p99 latency during each sweep, against its latency before.
// Prints total time, time per batch (median, p99), the longest statement (the longest any row lock is held).
// Seeded with INSERT ... SELECT generate_series, then VACUUM ANALYZE. Uses DATABASE_URL or starts its own PostgreSQL.
// Run: pnpm bench postgres-sweep (ROWS=10000000 node bench/postgres-sweep.bench.mjs for the issue's table).
import { postgresStore } from '@payhooks/postgres'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'

const ROWS = Number(process.env.ROWS ?? 1_000_000)
const SWEEP_BATCH = Number(process.env.SWEEP_BATCH ?? 5000)

const server = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => server?.stop())
const url = process.env.DATABASE_URL ?? server.url
const admin = new pg.Pool({ connectionString: url, max: 2 })
const runId = Date.now().toString(36)
const { rows: version } = await admin.query('SHOW server_version')

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0
}
const ms = (value) => `${value.toFixed(1)} ms`

/** A store table of ROWS rows: the first half expired (done markers of 73 h ago and older), the rest live. */
async function seed(table) {
  const started = Date.now()
  await admin.query(
    `CREATE TABLE ${table} (event_id text PRIMARY KEY, token text, expires_at timestamptz NOT NULL, body_digest text)`,
  )
  const half = Math.floor(ROWS / 2)
  for (let from = 1; from <= ROWS; from += 1_000_000) {
    const to = Math.min(ROWS, from + 999_999)
    await admin.query(
      `INSERT INTO ${table} (event_id, token, expires_at, body_digest)
       SELECT 'evt_' || i, NULL, clock_timestamp() + (i - $3::int) * interval '100 ms', md5(i::text)
       FROM generate_series($1::int, $2::int) AS i`,
      [from, to, half],
    )
  }
  await admin.query(`VACUUM ANALYZE ${table}`)
  return (Date.now() - started) / 1000
}

/**
 * Claims and completes events one after another until `stop()`: every other one an expired event (its marker in the
 * sweep's way), the others new. Resolves each claim + complete's latency.
 */
function claimer(store, prefix) {
  const latencies = []
  let running = true
  let i = 0
  const done = (async () => {
    while (running) {
      i++
      const eventId = i % 2 ? `evt_${1 + Math.floor(Math.random() * (ROWS / 2 - 1))}` : `${prefix}_${i}`
      const started = performance.now()
      const claim = await store.claim(eventId, 60_000)
      if (claim.status === 'claimed') await store.complete(eventId, claim.token)
      latencies.push(performance.now() - started)
    }
  })()
  return {
    async stop() {
      running = false
      await done
      return latencies
    },
  }
}

/** Runs `sweep` while the claimer runs; the claimer's latency over a second before it as the baseline. */
async function measure(name, table, sweep) {
  const pool = new pg.Pool({ connectionString: url, max: 4, connectionTimeoutMillis: 60_000 })
  const store = postgresStore(pool, { table, sweepIntervalMs: 0, createTable: false, sweepBatch: SWEEP_BATCH })
  await store.init()
  const before = claimer(store, `${name}_before`)
  await new Promise((resolve) => setTimeout(resolve, 2000))
  const idle = await before.stop()
  const during = claimer(store, `${name}_during`)
  const started = performance.now()
  const { deleted, statements } = await sweep(store, pool)
  const total = performance.now() - started
  const busy = await during.stop()
  await pool.end()
  console.log(`${name}: ${deleted.toLocaleString('en')} rows deleted in ${(total / 1000).toFixed(1)} s`)
  if (statements.length > 1) {
    console.log(
      `  ${statements.length} batches of ${SWEEP_BATCH}: median ${ms(quantile(statements, 0.5))}, p99 ${ms(quantile(statements, 0.99))}`,
    )
  }
  const longest = Math.max(...statements)
  console.log(
    `  longest statement (longest lock held): ${ms(longest)}${statements.length > 1 ? ` (batch ${statements.indexOf(longest) + 1}; first three ${statements.slice(0, 3).map(ms).join(', ')})` : ''}`,
  )
  console.log(
    `  claimer before: p50 ${ms(quantile(idle, 0.5))}, p99 ${ms(quantile(idle, 0.99))}, max ${ms(Math.max(...idle))} (${idle.length} claims)`,
  )
  console.log(
    `  claimer during: p50 ${ms(quantile(busy, 0.5))}, p99 ${ms(quantile(busy, 0.99))}, max ${ms(Math.max(...busy))} (${busy.length} claims)`,
  )
}

console.log(
  `PostgreSQL ${version[0].server_version}, ${ROWS.toLocaleString('en')} rows, half expired; ${new Date().toISOString().slice(0, 10)}`,
)
const old = `bench_sweep_${runId}_old`
console.log(`(seeded ${old} in ${(await seed(old)).toFixed(1)} s)`)
await measure('old: one DELETE, no index on expires_at', old, async (_store, pool) => {
  const started = performance.now()
  const { rowCount } = await pool.query(`DELETE FROM ${old} WHERE expires_at < clock_timestamp()`)
  return { deleted: rowCount, statements: [performance.now() - started] }
})
await admin.query(`DROP TABLE ${old}`)

const batched = `bench_sweep_${runId}_batched`
console.log(`(seeded ${batched} in ${(await seed(batched)).toFixed(1)} s)`)
const indexed = Date.now()
await admin.query(`CREATE INDEX ${batched}_expiry_idx ON ${batched} (expires_at)`)
await admin.query(`ANALYZE ${batched}`)
console.log(`(expiry index built in ${((Date.now() - indexed) / 1000).toFixed(1)} s)`)
await measure(`store.sweep(), batches of ${SWEEP_BATCH}`, batched, async (store, pool) => {
  const statements = []
  const query = pool.query.bind(pool)
  pool.query = async (...args) => {
    const started = performance.now()
    try {
      return await query(...args)
    } finally {
      if (String(args[0]).startsWith('WITH gone AS (DELETE')) statements.push(performance.now() - started)
    }
  }
  const deleted = await store.sweep()
  return { deleted, statements }
})
await admin.query(`DROP TABLE ${batched}`)
await admin.end()
