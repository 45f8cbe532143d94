// The engine of postgres-bindings.bench.mjs and mysql-bindings.bench.mjs (issue 48): what binding the transaction
// engine to a library costs. Each library brings two variants: its binding (the store a user would write) and "the
// same library by hand" (a hand-written store doing the least the promise needs, through that library: an INSERT
// claim, then the library's own transaction with the handler's insert and an UPDATE marking the claimed row done),
// both behind the same webhooks.receive(), so the difference between them is the binding's own cost and the
// difference between the by-hand rows is the library's. CPU of this process per handled event (process.cpuUsage),
// wall time for scale, statements per event from the server's own counters; rounds in rotating order, medians of
// per-round ratios with their ranges. A database brings `setup` (fresh tables for a receiver), `statements` (a
// counter read before and after a run) and `close`.
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { createWebhooks } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'

export const CONCURRENCY = 16
/** Each library's pool: the 16 in flight, and room for the store's claims beside the open transactions. */
export const POOL = CONCURRENCY + 4
export const SECRET = 'whsec_bench_bindings'
export const quiet = { warn() {}, error() {} }

const rolledBack = new Error('rolled back')
const lost = new Error('lost')

/**
 * The hand-written store of one library on `table` (see the top): `lib.claim(table, eventId, token)` inserts the
 * claim row (failing on a duplicate, which `lib.duplicate(error)` recognizes), `lib.transaction(work)` is the
 * library's own transaction, `lib.done(tx, table, eventId, token)` marks the row done and answers the rows it changed.
 */
export function handStore(lib, table) {
  let counter = 0
  return {
    retentionMs: 73 * 3_600_000,
    async claim(eventId) {
      const token = `hand.${++counter}`
      try {
        await lib.claim(table, eventId, token)
        return { status: 'claimed', token }
      } catch (error) {
        if (!lib.duplicate(error)) throw error
        return { status: 'processing' }
      }
    },
    extend: async () => true,
    complete: async () => true,
    release: async () => true,
    async transaction(eventId, token, work) {
      try {
        return await lib.transaction(async (tx) => {
          if (!(await work({ db: tx }))) throw rolledBack
          if ((await lib.done(tx, table, eventId, token)) !== 1) throw lost
          return 'committed'
        })
      } catch (error) {
        if (error === rolledBack) return 'rolled_back'
        if (error === lost) return 'lost'
        throw error
      }
    },
  }
}

/** Signed deliveries made ahead, so signing is not measured. */
const deliveries = (label, count) =>
  Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const { body, headers } = await signedDelivery(
        sampleEvent('transaction_settled', { eventId: `evt_${label}_${i}` }),
        SECRET,
      )
      return { method: 'POST', body, getHeader: (name) => headers[name] }
    }),
  )

async function run(webhooks, batch) {
  globalThis.gc?.()
  let next = 0
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
  return { cpuUs: (used.user + used.system) / batch.length, wallUs: ((performance.now() - wall) * 1000) / batch.length }
}

async function startProfile() {
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 200 })
  await session.post('Profiler.start')
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop')
      writeFileSync(file, JSON.stringify(profile))
      session.disconnect()
    },
  }
}

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '—'
const range = (values) => `${fmt(Math.min(...values), 2)}–${fmt(Math.max(...values), 2)}`
const ratio = (values) => (values.length ? `${fmt(median(values), 2)}x (${range(values)})` : '')

/**
 * Runs the bench. `libraries`: name → async () => `{ store(table), write(db, ledger, eventId), hand? }`, the first
 * the raw driver's store (the baseline); `hand` is the library's part of {@link handStore}. `database`:
 * `{ setup(label) → { table, ledger }, statements?: { start(), read() → { total, kinds } } (the statements the server
 * ran between the two, in all and by kind), title, close() }`.
 */
export async function bindingRounds({ libraries, database, target }) {
  const ROUNDS = Number(process.env.ROUNDS ?? 7)
  const DELIVERIES = Number(process.env.DELIVERIES ?? 1_500)
  const only = process.env.ONLY?.split(',')
  const hands = process.env.HAND !== '0'
  // ALONE=1: only those of ONLY, without the baseline (for a CPU profile of one binding).
  const alone = process.env.ALONE === '1'
  const base = Object.keys(libraries)[0]
  const names = Object.keys(libraries).filter((name, i) => (i === 0 && !alone) || !only || only.includes(name))
  const made = {}
  for (const name of names) made[name] = await libraries[name]()
  // Each library's binding and its by-hand store run side by side in a round, so their ratio sees the same load.
  const groups = names.map((name) => (hands && made[name].hand ? [name, `${name} by hand`] : [name]))
  const variants = groups.flat()
  const results = Object.fromEntries(variants.map((v) => [v, { cpu: [], wall: [], base: [], own: [], statements: [] }]))
  const kinds = {}

  const receiver = async (variant, label) => {
    const name = variant.replace(/ by hand$/, '')
    const { table, ledger } = await database.setup(label)
    const library = made[name]
    const store = variant === name ? library.store(table) : handStore(library.hand, table)
    await store.init?.()
    // One event type, 16 in flight: no bulkheads (they would keep it to half the slots).
    const webhooks = createWebhooks({ secret: SECRET, store, checkAtStart: false, bulkheads: false })
    webhooks.on('transaction_settled', async (event, { db }) => {
      await library.write(db, ledger, event.event_id)
    })
    return webhooks
  }

  for (let round = -1; round < ROUNDS; round++) {
    const figures = {}
    const order = groups.map((_, i) => groups[(i + round + groups.length) % groups.length])
    for (const group of order) {
      for (const variant of round % 2 ? group : [...group].reverse()) {
        const label = `${variant.replace(/\W/g, '').toLowerCase()}_${round + 1}`
        const webhooks = await receiver(variant, label)
        const batch = await deliveries(label, round < 0 ? 300 : DELIVERIES)
        await database.statements?.start()
        // CPU_PROFILE=<dir>: each variant's run of the last round, profiled alone.
        const profiler = process.env.CPU_PROFILE && round === ROUNDS - 1 ? await startProfile() : undefined
        figures[variant] = await run(webhooks, batch)
        if (profiler) await profiler.stop(`${process.env.CPU_PROFILE}/${label}.cpuprofile`)
        const counted = await database.statements?.read()
        if (counted) {
          figures[variant].statements = counted.total / batch.length
          kinds[variant] = Object.entries(counted.kinds)
            .map(([kind, n]) => [kind, n / batch.length])
            .filter(([, n]) => n >= 0.005)
        }
        await webhooks.close()
      }
    }
    if (round < 0) continue // warm-up
    for (const variant of variants) {
      const name = variant.replace(/ by hand$/, '')
      const own = variant === name ? `${name} by hand` : undefined
      const baseline = variant === name ? base : `${base} by hand`
      const r = results[variant]
      r.cpu.push(figures[variant].cpuUs)
      r.wall.push(figures[variant].wallUs)
      if (figures[variant].statements !== undefined) r.statements.push(figures[variant].statements)
      if (figures[baseline]) r.base.push(figures[variant].cpuUs / figures[baseline].cpuUs)
      if (own && figures[own]) r.own.push(figures[variant].cpuUs / figures[own].cpuUs)
    }
  }

  console.log(
    `node ${process.version}, ${database.title}, ${ROUNDS} rounds of ${DELIVERIES} deliveries, ${CONCURRENCY} in flight; medians (per-round ratio range in brackets)`,
  )
  console.table(
    variants.map((variant) => {
      const r = results[variant]
      const own = results[`${variant} by hand`]
      return {
        store: variant,
        'CPU µs/event': fmt(median(r.cpu), 1),
        [`CPU vs ${base} (by hand: vs ${base} by hand)`]:
          variant === base || variant === `${base} by hand` ? '' : ratio(r.base),
        'CPU vs own by hand': ratio(r.own),
        "binding's µs": own ? fmt(median(r.cpu) - median(own.cpu), 0) : '',
        'wall µs/event': fmt(median(r.wall), 1),
        'statements/event': r.statements.length ? fmt(median(r.statements), 2) : '—',
      }
    }),
  )
  if (Object.keys(kinds).length > 0) {
    console.log('Statements per event by kind (last round):')
    for (const variant of variants) {
      console.log(`  ${variant}: ${(kinds[variant] ?? []).map(([kind, n]) => `${kind} ${fmt(n, 2)}`).join(', ')}`)
    }
  }
  console.log(target)
  await database.close()
}
