// Bytes Redis keeps per journal answer (issue 49, item 3): N answers written through redisJournal in batches of 256,
// as a receiver fleet writes them, on a Redis of its own with the default settings. One answer per event (the common
// case: handled on the first delivery; 2% failures), then three per event (a failure, its retry processed, a
// duplicate). Per answer: used_memory grown over the run (everything Redis allocates: streams, indexes, counts,
// expiry entries). Realistic records: 40-character event ids, the recorder's 20-character ids, an instance named as
// `defaultInstance()` names one, the service's `created_at`. The journal of an earlier commit (BENCH_BASELINE, as in
// redis-storage.bench.mjs) alongside when present.
// Run: pnpm bench redis-journal-storage     (BENCH_EVENTS, default 40000)
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import * as kit from '@payhooks/redis'
import { Redis } from 'ioredis'
import { startRedis } from './redis-server.mjs'
import { eventId } from './store-events.mjs'

const ANSWERS = Number(process.env.BENCH_EVENTS ?? 40_000)
const baselinePath = process.env.BENCH_BASELINE ?? join(import.meta.dirname, '../packages/redis/.baseline/index.js')
const baseline = existsSync(baselinePath) ? await import(pathToFileURL(baselinePath).href) : undefined

const server = await startRedis()
process.on('exit', () => server.stop())
const redis = new Redis(server.url)
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1])

/** `ANSWERS` answers, `perEvent` per event, in answer order over the last `ANSWERS / 20` seconds (20 answers/s). */
function answers(perEvent) {
  const start = Date.now() - (ANSWERS / 20) * 1000
  const outcomes = perEvent === 1 ? ['processed'] : ['handler_failed', 'processed', 'duplicate']
  return Array.from({ length: ANSWERS }, (_, i) => {
    const at = start + i * 50
    const n = Math.floor(i / perEvent)
    const outcome = perEvent === 1 && i % 50 === 0 ? 'handler_failed' : outcomes[i % perEvent]
    return {
      id: `5f3a9c1e7b2d${i.toString(36).padStart(8, '0')}`,
      at,
      eventId: eventId(n),
      eventType: 'transaction_settled',
      createdAt: `${new Date(at - 2000 - (n % 7) * 1000).toISOString().slice(0, 19)}Z`,
      status: outcome === 'handler_failed' ? 500 : 200,
      outcome,
      instance: 'ip-10-0-3-17:4121',
      durationMs: 3 + (i % 40),
      secretIndex: 0,
    }
  })
}

async function measure(module, perEvent) {
  await redis.flushall()
  const journal = module.redisJournal(redis)
  const records = answers(perEvent)
  const before = await usedMemory()
  for (let i = 0; i < records.length; i += 256) await journal.write(records.slice(i, i + 256))
  const grown = (await usedMemory()) - before
  const { eventId: first } = records[0]
  const timeline = await journal.answers(first)
  if (timeline.length !== perEvent) throw new Error(`${first}: ${timeline.length} answers read back`)
  return { perAnswer: Math.round(grown / ANSWERS), keys: await redis.dbsize() }
}

const variants = baseline
  ? [
      ['kit', kit],
      ['before', baseline],
    ]
  : [['kit', kit]]
console.log(`bytes per journal answer kept for the retention, ${ANSWERS} answers (used_memory grown / answers)`)
for (const [name, perEvent] of [
  ['one answer per event', 1],
  ['three answers per event', 3],
]) {
  for (const [variant, module] of variants) {
    const { perAnswer, keys } = await measure(module, perEvent)
    console.log(`  ${name.padEnd(26)} ${variant.padEnd(6)} ${String(perAnswer).padStart(4)} B  (${keys} keys)`)
  }
}
redis.disconnect()
server.stop()
