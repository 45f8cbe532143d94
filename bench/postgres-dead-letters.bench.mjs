// postgresDeadLetterStore's counts at volume (issue 39), against the store without migration 010 in the same run:
// - count() at LETTERS letters (default 100,000; LETTERS=1000000 for a million): the counts kept by 010's triggers
//   (a sum of a few rows) against the index-only scan of migration 008's indexes (a table without 010);
// - parks per second from PARKERS (32) connections at once, every park of the same status, code and event type (the
//   worst case for the counter rows), with and without the triggers: rounds taking turns, medians.
// Seeded with INSERT ... SELECT generate_series, then VACUUM ANALYZE. Uses DATABASE_URL or starts its own PostgreSQL.
// Run: pnpm bench postgres-dead-letters
import {
  createDeadLetterCountIndexesSql,
  createDeadLetterTableSql,
  postgresDeadLetterStore,
  widenDeadLetterCodeSql,
} from '@payhooks/postgres'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'

const LETTERS = Number(process.env.LETTERS ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 21)
const PARKERS = Number(process.env.PARKERS ?? 32)
const PARKS = Number(process.env.PARKS ?? 3_200)
const PARK_ROUNDS = Number(process.env.PARK_ROUNDS ?? 7)

const server = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => server?.stop())
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? server.url,
  max: PARKERS + 2,
  connectionTimeoutMillis: 30_000,
})
const runId = Date.now().toString(36)
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** A store on a new table: `kept`, made by the store (010's counts); else as an earlier release made it (002, 003, 008). */
async function storeOn(name, kept) {
  const table = `bench_dl_${runId}_${name}`
  if (!kept) {
    for (const ddl of [
      createDeadLetterTableSql(table),
      widenDeadLetterCodeSql(table),
      createDeadLetterCountIndexesSql(table),
    ]) {
      await pool.query(ddl)
    }
  }
  const store = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0, createTable: kept })
  await store.init()
  return { table, store }
}

async function seed(table) {
  await pool.query(
    `INSERT INTO ${table} (event_id, event_type, body, headers, code, reason, first_parked_at, parked_at, park_count, status)
     SELECT 'evt_seed_' || i, (ARRAY['transaction_settled', 'transaction_returned', 'sale_created_from_batch'])[1 + i % 3],
       convert_to('{"event_id":"evt_seed_' || i || '"}', 'UTF8'), '{"content-type":"application/json"}',
       (ARRAY['handler_failed', 'schema_mismatch', 'stale_event'])[1 + i % 3], 'ledger down',
       now() - i * interval '1 second', now() - i * interval '1 second', 1, 'parked'
     FROM generate_series(1, $1::int) AS i`,
    [LETTERS],
  )
  await pool.query(`VACUUM ANALYZE ${table}`)
}

async function time(call) {
  const samples = []
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now()
    await call()
    samples.push(performance.now() - started)
  }
  return median(samples)
}

const kept = await storeOn('kept', true)
const scanned = await storeOn('scanned', false)
let started = Date.now()
await seed(kept.table)
await seed(scanned.table)
console.log(
  `(seeded two tables of ${LETTERS.toLocaleString('en')} letters in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
)

const queries = [
  ['count() parked', undefined],
  ["count({ code: 'handler_failed' })", { code: 'handler_failed' }],
  ['count({ code, eventType })', { code: 'handler_failed', eventType: 'transaction_settled' }],
  ["count({ status: 'all' })", { status: 'all' }],
]
console.log(
  `count() at ${LETTERS.toLocaleString('en')} letters, median of ${ROUNDS}: kept counts (010) | index-only scan (008)`,
)
for (const [what, query] of queries) {
  const a = await time(() => kept.store.count(query))
  const b = await time(() => scanned.store.count(query))
  const same = (await kept.store.count(query)) === (await scanned.store.count(query))
  console.log(
    `  ${what.padEnd(36)} ${a.toFixed(2).padStart(7)} ms | ${b.toFixed(2).padStart(7)} ms  (${(b / a).toFixed(0)}x${same ? '' : ', COUNTS DIFFER'})`,
  )
}

/** PARKS parks from PARKERS at once, every one of the same key; resolves parks per second. */
let parked = 0
async function parks(store) {
  const body = new TextEncoder().encode('{"event_id":"evt_park"}')
  const next = () => parked++
  const begun = performance.now()
  await Promise.all(
    Array.from({ length: PARKERS }, async () => {
      for (let i = 0; i < PARKS / PARKERS; i++) {
        await store.park({
          eventId: `evt_park_${next()}`,
          eventType: 'transaction_settled',
          body,
          headers: { 'content-type': 'application/json' },
          code: 'handler_failed',
          reason: 'ledger down',
          parkedAt: new Date(),
        })
      }
    }),
  )
  return PARKS / ((performance.now() - begun) / 1000)
}

const rates = { kept: [], scanned: [] }
await parks(kept.store)
await parks(scanned.store)
for (let round = 0; round < PARK_ROUNDS; round++) {
  const order = round % 2 ? ['kept', 'scanned'] : ['scanned', 'kept']
  for (const name of order) rates[name].push(await parks(name === 'kept' ? kept.store : scanned.store))
}
const ratios = rates.kept.map((rate, i) => rate / rates.scanned[i])
console.log(
  `parks/s, ${PARKERS} at once, one key, median of ${PARK_ROUNDS} rounds of ${PARKS}: with the triggers ${median(rates.kept).toFixed(0)}, without ${median(rates.scanned).toFixed(0)} (${median(ratios).toFixed(2)}x, rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
)
const exact = await pool.query(`SELECT count(*)::int AS n FROM ${kept.table} WHERE status = 'parked'`)
console.log(`  after the parks: count() ${await kept.store.count()}, SELECT count(*) ${exact.rows[0].n}`)

started = Date.now()
for (const { table } of [kept, scanned]) await pool.query(`DROP TABLE ${table}`)
await pool.query(`DROP TABLE ${kept.table}_counts`)
await pool.query(`DROP FUNCTION ${kept.table}_count_fn`)
await pool.end()
