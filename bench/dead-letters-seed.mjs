// Shared by the dead-letter benches: LETTERS signed letters, parked into a Redis or PostgreSQL dead-letter store
// (a third of each code and of each of three event types, one millisecond apart, oldest first), each created 72 hours
// before it was parked, less up to a second (an outage's events, parked on their last tries, not quite in order).
import { SIGNATURE_HEADER, sign } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'

export const SECRET = 'whsec_bench_volume'
export const TYPES = ['transaction_settled', 'transaction_returned', 'sale_created_from_batch']
export const CODES = ['handler_failed', 'schema_mismatch', 'stale_event']

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
/** The p-th percentile (0 to 100) of `values`, nearest rank. */
export const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}

const signed = await signedDelivery(sampleEvent('transaction_settled', { eventId: 'evt_bench' }), SECRET)

const HOURS_72 = 72 * 3_600_000

/** When the `i`-th letter's event was created (ms). */
export const createdAtOf = (i, start) => start + i - HOURS_72 - ((i * 7919) % 1000)

/** The `i`-th letter, parked at `start + i` ms. */
export async function letter(i, start) {
  const eventId = `evt_vol_${String(i).padStart(7, '0')}`
  const body = signed.body.replace('evt_bench', eventId)
  return {
    eventId,
    eventType: TYPES[i % 3],
    body: new TextEncoder().encode(body),
    headers: { ...signed.headers, [SIGNATURE_HEADER]: await sign(SECRET, body) },
    code: CODES[i % 3],
    reason: 'ledger down',
    createdAt: new Date(createdAtOf(i, start)),
    parkedAt: new Date(start + i),
  }
}

/** Parks `count` letters through the store's own script, many in flight on one connection (ioredis pipelines). */
export async function seedRedis(store, count, start) {
  for (let i = 0; i < count; i += 1000) {
    await Promise.all(
      Array.from({ length: Math.min(1000, count - i) }, async (_, j) => store.park(await letter(i + j, start))),
    )
  }
}

/** Inserts `count` letters into `table`, 10,000 rows a statement, then VACUUM ANALYZE (index-only scans). */
export async function seedPostgres(pool, table, count, start) {
  for (let i = 0; i < count; i += 10_000) {
    const batch = await Promise.all(Array.from({ length: Math.min(10_000, count - i) }, (_, j) => letter(i + j, start)))
    await pool.query(
      `INSERT INTO ${table} (event_id, event_type, body, headers, code, reason, created_at, first_parked_at, parked_at, park_count, status, replayed_at)
       SELECT id, type, body, headers, code, 'ledger down', created, at, at, 1, 'parked', NULL
       FROM unnest($1::text[], $2::text[], $3::bytea[], $4::jsonb[], $5::text[], $6::timestamptz[], $7::timestamptz[]) AS t(id, type, body, headers, code, at, created)`,
      [
        batch.map((l) => l.eventId),
        batch.map((l) => l.eventType),
        batch.map((l) => Buffer.from(l.body)),
        batch.map((l) => JSON.stringify(l.headers)),
        batch.map((l) => l.code),
        batch.map((l) => l.parkedAt),
        batch.map((l) => l.createdAt),
      ],
    )
  }
  await pool.query(`VACUUM ANALYZE ${table}`)
}
