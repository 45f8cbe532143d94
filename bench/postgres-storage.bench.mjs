// Bytes PostgreSQL keeps per event at the default retention (issue 39, item 5): N events through postgresStore, each
// claimed with a body digest and then completed (handled) or released (failed), unordered and ordered (an ordering
// key per event, the worst case, and two per key: a settlement and its return); then N events parked by
// postgresDeadLetterStore (a failed event kept as a letter: its body, headers and reason, and the kept counts).
// Per event: pg_total_relation_size (heap, TOAST and indexes) of the store's table and its fences (the letters' table
// and its counts) grown over the run, after VACUUM (the space of dead row versions is reused, not returned), and after
// VACUUM FULL (the rows and indexes packed: the floor). 40-character event ids, 36-character ordering keys, a
// 43-character digest, the sample transaction_settled body. Starts its own PostgreSQL unless DATABASE_URL is set.
// Run: pnpm bench postgres-storage     (BENCH_EVENTS, default 100000)
import { SIGNATURE_HEADER } from '@payhooks/core'
import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { sampleEvent } from '@payhooks/testing'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { eventId, handleEvents, hex } from './store-events.mjs'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 100_000)
const server = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => server?.stop())
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? server.url,
  max: 20,
  connectionTimeoutMillis: 30_000,
})
const runId = Date.now().toString(36)
const digest = (n) => `${hex(n, 8)}${'x'.repeat(35)}`

/** pg_total_relation_size of `tables` (those that exist), summed. */
async function sizeOf(tables) {
  let total = 0
  for (const table of tables) {
    const { rows } = await pool.query('SELECT coalesce(pg_total_relation_size(to_regclass($1)), 0)::float8 AS size', [
      table,
    ])
    total += rows[0].size
  }
  return total
}

/** Per event: grown after VACUUM, and after VACUUM FULL, over `tables`. */
async function grown(tables, before) {
  for (const table of tables) await pool.query(`VACUUM ${table}`).catch(() => {})
  const vacuumed = (await sizeOf(tables)) - before
  for (const table of tables) await pool.query(`VACUUM FULL ${table}`).catch(() => {})
  const packed = (await sizeOf(tables)) - before
  return [vacuumed / EVENTS, packed / EVENTS]
}

async function events(ordered, fail, perKey) {
  const table = `bench_size_${runId}_${ordered ? 'o' : 'u'}${fail ? 'f' : 'h'}${perKey}`
  const tables = [table, `${table}_fences`]
  const store = postgresStore(pool, { table, sweepIntervalMs: 0 })
  await store.init()
  // The fence table exists from the first ordered claim: made (empty) before measuring.
  if (ordered) {
    const claim = await store.claim('evt_warm', 60_000, undefined, {
      key: 'warm',
      at: 0,
      eventType: 'transaction_settled',
    })
    await store.release('evt_warm', claim.token)
    await pool.query(`DELETE FROM ${table}_fences`)
  }
  const before = await sizeOf(tables)
  await handleEvents(store, { events: EVENTS, ordered, fail, perKey, digest })
  const result = await grown(tables, before)
  store.shutdown()
  for (const t of tables) await pool.query(`DROP TABLE IF EXISTS ${t}`)
  return result
}

async function letters() {
  const table = `bench_size_${runId}_letters`
  const store = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
  await store.init()
  const tables = [table, `${table}_counts`]
  const before = await sizeOf(tables)
  const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: eventId(0) }))
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < EVENTS) {
        const n = next++
        await store.park({
          eventId: eventId(n),
          eventType: 'transaction_settled',
          body: new TextEncoder().encode(template.replace(eventId(0), eventId(n))),
          headers: { [SIGNATURE_HEADER]: 'a'.repeat(64), 'content-type': 'application/json' },
          code: 'handler_failed',
          reason: 'Error: ledger unavailable',
          createdAt: new Date(),
          parkedAt: new Date(),
        })
      }
    }),
  )
  const result = await grown(tables, before)
  store.shutdown()
  await pool.query(`DROP TABLE ${table}, ${table}_counts`)
  await pool.query(`DROP FUNCTION ${table}_count_fn`)
  return [...result, template.length]
}

const { rows: version } = await pool.query('SHOW server_version')
console.log(
  `PostgreSQL ${version[0].server_version}, ${EVENTS.toLocaleString('en')} events each, ${new Date().toISOString().slice(0, 10)}: bytes per event after VACUUM | after VACUUM FULL`,
)
const row = (what, [vacuumed, packed]) =>
  console.log(`  ${what.padEnd(52)} ${vacuumed.toFixed(0).padStart(5)} B | ${packed.toFixed(0).padStart(5)} B`)
row('unordered, handled', await events(false, false, 1))
row('unordered, failed (released)', await events(false, true, 1))
row('ordered, handled, one event per ordering key', await events(true, false, 1))
row('ordered, handled, two events per ordering key', await events(true, false, 2))
row('ordered, failed (released)', await events(true, true, 1))
const [vacuumed, packed, bodyBytes] = await letters()
row(`parked as a dead letter (${bodyBytes}-byte body)`, [vacuumed, packed])
await pool.end()
