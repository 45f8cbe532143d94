// The signature check of one delivery on node:crypto: the provider's `match` with the precomputed key blocks
// (two one-shot SHA-256 calls, the default) against the same provider on `createHmac` with a KeyObject (`pads:
// false`, what it did before) and against the hand-written check (`createHmac` with the secret string,
// `timingSafeEqual`). Fresh ~600-byte bodies, alternating rounds, medians; garbage collection counted in (a
// `createHmac` leaves a native handle for the collector).
//   pnpm bench hmac
import * as crypto from 'node:crypto'
import { sampleEvent } from '@payhooks/testing'

// The providers are not part of core's public entry; the built modules are.
const { nodeCryptoProvider } = await import('../packages/core/dist/crypto/node-crypto-provider.js')

const SECRET = 'whsec_bench'
const PER_ROUND = 50_000
const ROUNDS = 7
const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bench_@' }))
let next = 0
function deliveries() {
  return Array.from({ length: PER_ROUND }, () => {
    const body = Buffer.from(template.replace('evt_bench_@', `evt_bench_${next++}`))
    return { body, signature: crypto.createHmac('sha256', SECRET).update(body).digest('hex').toUpperCase() }
  })
}

const pads = nodeCryptoProvider(crypto, Buffer)
const keyObject = nodeCryptoProvider(crypto, Buffer, { pads: false })
const secrets = [SECRET]
const variants = {
  'hand-written: createHmac(secret) + timingSafeEqual': ({ body, signature }) =>
    crypto.timingSafeEqual(crypto.createHmac('sha256', SECRET).update(body).digest(), Buffer.from(signature, 'hex')),
  'provider, createHmac(KeyObject) (pads: false)': ({ body, signature }) =>
    keyObject.match(secrets, body, signature) === 0,
  'provider, precomputed key blocks (default)': ({ body, signature }) => pads.match(secrets, body, signature) === 0,
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const names = Object.keys(variants)
const times = Object.fromEntries(names.map((name) => [name, []]))
for (let round = 0; round <= ROUNDS; round++) {
  const order = round % 2 ? [...names].reverse() : names
  for (const name of order) {
    const input = deliveries()
    globalThis.gc?.()
    const check = variants[name]
    const start = process.hrtime.bigint()
    for (const delivery of input) if (!check(delivery)) throw new Error(`${name} refused a signed body`)
    if (round > 0) times[name].push(Number(process.hrtime.bigint() - start) / PER_ROUND / 1000)
  }
}
const baseline = times[names[0]]
console.log(
  `Node ${process.version}, ${PER_ROUND} checks per round, ${ROUNDS} rounds (+1 warm-up), ${template.length}-byte bodies\n`,
)
console.table(
  names.map((name) => ({
    check: name,
    'µs/check (median)': median(times[name]).toFixed(2),
    'vs hand-written (median of per-round ratios)': `${median(times[name].map((t, i) => t / baseline[i])).toFixed(2)}x`,
  })),
)
