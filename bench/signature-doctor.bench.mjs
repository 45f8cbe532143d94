// Cost of the signature doctor, which runs only after a failed check: one diagnosis of a typical event signed with
// a secret the receiver does not hold (the worst case: every candidate is tried), against the one check it follows,
// on each HMAC provider, in alternating rounds; medians reported.
//   pnpm bench signature-doctor
import * as crypto from 'node:crypto'
import { diagnoseSignature, sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'

// The providers are not part of core's public entry; the built modules are.
const { nodeCryptoProvider } = await import('../packages/core/dist/crypto/node-crypto-provider.js')
const { subtleCryptoProvider } = await import('../packages/core/dist/crypto/subtle-crypto-provider.js')

const PER_ROUND = 2_000
const ROUNDS = 5
const body = Buffer.from(JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bench_doctor' })))
const signature = await sign('whsec_not_held', body)
const secrets = ['whsec_bench']
const providers = { 'node:crypto': nodeCryptoProvider(crypto, Buffer), 'Web Crypto': subtleCryptoProvider() }

const variants = {}
for (const [name, provider] of Object.entries(providers)) {
  variants[`${name}: the failed check`] = async () => {
    for (let i = 0; i < PER_ROUND; i++) await provider.match(secrets, body, signature)
  }
  variants[`${name}: diagnosis`] = async () => {
    for (let i = 0; i < PER_ROUND; i++) {
      const hint = await diagnoseSignature({ secrets, body, signature }, provider)
      if (hint.code !== 'wrong_secret_or_bytes') throw new Error(hint.code)
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const times = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
for (let r = 0; r < ROUNDS + 1; r++) {
  for (const [name, run] of Object.entries(variants)) {
    const start = process.hrtime.bigint()
    await run()
    if (r > 0) times[name].push(Number(process.hrtime.bigint() - start) / 1e3 / PER_ROUND) // round 0 warms up
  }
}
console.log(`Node ${process.version}, a ${body.length}-byte transaction_settled body, ${PER_ROUND} calls per round`)
console.table(
  Object.keys(variants).map((name) => {
    const provider = name.split(':')[0] === 'node' ? 'node:crypto' : 'Web Crypto'
    const check = median(times[`${provider}: the failed check`])
    const us = median(times[name])
    return { variant: name, 'µs/call (median)': us.toFixed(1), 'vs the check': `${(us / check).toFixed(1)}x` }
  }),
)
