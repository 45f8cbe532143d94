// The floor of the other Redis layout issue 39 item 5 asked about (not the store's layout: what it would keep): done
// markers and fence marks as fields of shared hashes, one per bucket (a hash of the event id or ordering key) and time
// generation, rather than keys of their own. Writes MARKERS fields into BUCKETS hashes of one generation, as the
// scripts would leave them, and divides used_memory grown by the fields: plain (40-character event id -> 32-hex body
// digest; 36-character ordering key -> `at|type|id`) and packed (16 bytes of SHA-256 of the id or key as the field, the
// digest's 16 raw bytes; the mark as 6 bytes of time, a 1-byte type code and the id). Twice: hashes over the server's
// hash-max-listpack-entries (a hash table per bucket: what a day of events at volume gives) and under it (listpack).
// A field lives until its generation's hash expires: a claim reads the last k + 1 generations of retention / k each,
// so a marker stays between one retention and one generation longer, (1 + 1/2k) retentions on average, where a key of
// its own stays exactly one. Per ordered event, steady state: (done + mark / events per key) x (1 + 1/2k).
// Run: pnpm bench redis-hash-layout     (BUCKETS, default 256)
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import { startRedis } from './redis-server.mjs'

const BUCKETS = Number(process.env.BUCKETS ?? 256)

const server = await startRedis()
process.on('exit', () => server.stop())
const redis = new Redis(server.url)
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1])
const entries = Number((await redis.config('GET', 'hash-max-listpack-entries'))[1])
const version = /redis_version:(\S+)/.exec(await redis.info('server'))[1]
const hex = (n, width) => n.toString(16).padStart(width, '0')
const sha = (text) => createHash('sha256').update(text).digest().subarray(0, 16)
const bucket = (n) => n % BUCKETS

const eventId = (n) => `evt_${hex(n, 8)}-7c1e-4c2a-9a8e-${hex(n * 7, 12)}`
const orderingKey = (n) => `txn_${hex(n, 32)}`
const digest = (n) => hex(n * 13, 32)
const at = (n) => 1_764_230_400_000 + n
const packedAt = (n) => {
  const bytes = Buffer.alloc(6)
  bytes.writeUIntBE(at(n), 0, 6)
  return bytes
}

const kinds = {
  'done, plain': (n) => [`payhooks:{d:${bucket(n)}}g:20421`, eventId(n), digest(n)],
  'done, packed': (n) => [`payhooks:{d:${bucket(n)}}g:20421`, sha(eventId(n)), Buffer.from(digest(n), 'hex')],
  'mark, plain': (n) => [
    `payhooks:{o:${bucket(n)}}g:20421`,
    orderingKey(n),
    `${at(n).toString(36)}|transaction_settled|${eventId(n)}`,
  ],
  'mark, packed': (n) => [
    `payhooks:{o:${bucket(n)}}g:20421`,
    sha(orderingKey(n)),
    Buffer.concat([packedAt(n), Buffer.from([3]), Buffer.from(eventId(n))]),
  ],
}

async function perField(kind, markers) {
  await redis.flushall()
  const before = await usedMemory()
  for (let start = 0; start < markers; start += 1000) {
    const pipeline = redis.pipeline()
    for (let n = start; n < Math.min(markers, start + 1000); n++) pipeline.hset(...kinds[kind](n))
    await pipeline.exec()
  }
  const grown = (await usedMemory()) - before
  const encoding = await redis.object('ENCODING', kinds[kind](0)[0])
  return { bytes: grown / markers, encoding }
}

const regimes = [
  [`hashes of ${3 * entries} fields (over hash-max-listpack-entries ${entries})`, 3 * entries * BUCKETS],
  [`hashes of ${entries >> 1} fields (under it)`, (entries >> 1) * BUCKETS],
]
const generations = [1, 4, 8]
console.log(`Redis ${version}, ${BUCKETS} buckets: bytes per field (used_memory grown / fields)`)
for (const [regime, markers] of regimes) {
  console.log(`\n${regime}: ${markers} fields`)
  const size = {}
  for (const kind of Object.keys(kinds)) {
    const { bytes, encoding } = await perField(kind, markers)
    size[kind] = bytes
    console.log(`  ${kind.padEnd(14)} ${bytes.toFixed(1).padStart(6)} B  (${encoding})`)
  }
  for (const form of ['plain', 'packed']) {
    for (const perKey of [1, 2]) {
      const kept = size[`done, ${form}`] + size[`mark, ${form}`] / perKey
      const rows = generations.map((k) => `k=${k} ${Math.round(kept * (1 + 1 / (2 * k)))} B`).join(', ')
      console.log(`  ordered, ${form}, ${perKey} per key: ${Math.round(kept)} B per field set; kept per event ${rows}`)
    }
  }
}
redis.disconnect()
server.stop()
