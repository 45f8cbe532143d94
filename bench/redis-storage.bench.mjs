// Bytes Redis keeps per event at the default retention (issue 39, item 5): N events through redisStore, each claimed
// with a body digest and then completed (handled) or released (failed), unordered and ordered (an ordering key per
// event, the worst case, and two per key: a settlement and its return). Per event: used_memory grown over the run
// (everything Redis allocates: keys, values, expiry entries, hash tables) and MEMORY USAGE of each kind of key (what
// the key itself takes). 40-character event ids, 36-character ordering keys, the default prefix `payhooks:`. The kit
// against today's store (BENCH_BASELINE, as in redis-ordered.bench.mjs) when present.
// Run: pnpm bench redis-storage     (BENCH_EVENTS, default 20000)
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import * as kit from '@payhooks/redis'
import { Redis } from 'ioredis'
import { startRedis } from './redis-server.mjs'
import { handleEvents, hex } from './store-events.mjs'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000)
const baselinePath = process.env.BENCH_BASELINE ?? join(import.meta.dirname, '../packages/redis/.baseline/index.js')
const baseline = existsSync(baselinePath) ? await import(pathToFileURL(baselinePath).href) : undefined

// A server of its own: the figures need a Redis holding nothing else.
const server = await startRedis()
process.on('exit', () => server.stop())
const redis = new Redis(server.url)
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1])

async function measure(module, ordered, fail, perKey) {
  await redis.flushall()
  const store = module.redisStore(redis)
  const before = await usedMemory()
  await handleEvents(store, { events: EVENTS, ordered, fail, perKey, digest: (n) => hex(n * 13, 32) })
  const grown = (await usedMemory()) - before
  const kinds = {}
  for (const key of (await redis.scan(0, 'COUNT', 2000))[1]) {
    const kind = key
      .replace(/[0-9a-f]{8,}/g, '…')
      .replace(/\{[^}]*\}(m[0-9a-z])?g[0-9a-z]+$/, (_, mark) => (mark ? '{…}m…g…' : '{…}g…'))
      .replace(/\{[^}]*\}\d+:(\d+):\d+$/, '{…}<gen>:$1:<bucket>')
      .replace(/\{[^}]*\}n$/, '{…}n')
      .replace(/\{o:\d\d\}/, '{o:NN}')
    kinds[kind] ??= { sizes: [], encodings: new Set() }
    kinds[kind].sizes.push(await redis.memory('USAGE', key))
    kinds[kind].encodings.add(await redis.object('ENCODING', key))
  }
  const usage = Object.entries(kinds)
    .map(
      ([kind, { sizes, encodings }]) =>
        `${kind} ${sizes.sort((a, b) => a - b)[sizes.length >> 1]} ${[...encodings].join('/')} x${sizes.length}`,
    )
    .join(', ')
  return { perEvent: Math.round(grown / EVENTS), keys: await redis.dbsize(), usage }
}

const scenarios = [
  ['unordered, handled', false, false, 1],
  ['unordered, failed', false, true, 1],
  ['ordered, handled (1 event per key)', true, false, 1],
  ['ordered, handled (2 events per key)', true, false, 2],
  ['ordered, failed (1 event per key)', true, true, 1],
]
const variants = baseline
  ? [
      ['kit', kit],
      ['today', baseline],
    ]
  : [['kit', kit]]
console.log(
  `bytes per event kept for the retention, ${EVENTS} events (used_memory grown / events; MEMORY USAGE medians)`,
)
for (const [name, ordered, fail, perKey] of scenarios) {
  for (const [variant, module] of variants) {
    const { perEvent, keys, usage } = await measure(module, ordered, fail, perKey)
    console.log(
      `  ${name.padEnd(36)} ${variant.padEnd(6)} ${String(perEvent).padStart(4)} B  (${keys} keys${usage ? `: ${usage}` : ''})`,
    )
  }
}
redis.disconnect()
server.stop()
