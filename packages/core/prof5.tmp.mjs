import { createHmac, timingSafeEqual } from 'node:crypto'
import { sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'

const S = 's'
const evs = []
for (let i = 0; i < 200000; i++) {
  const body = Buffer.from(JSON.stringify(sampleEvent('transaction_settled', { eventId: `e${i}` })))
  evs.push({ body, signature: await sign(S, body) })
}
const seen = new Set()
const t = process.hrtime.bigint()
for (const { body, signature } of evs) {
  if (!/^[0-9A-Fa-f]{64}$/.test(signature)) throw 1
  if (!timingSafeEqual(createHmac('sha256', S).update(body).digest(), Buffer.from(signature, 'hex'))) throw 2
  const e = JSON.parse(body.toString())
  if (!seen.has(e.event_id)) seen.add(e.event_id)
}
console.log('baseline sync', (Number(process.hrtime.bigint() - t) / evs.length / 1000).toFixed(2), 'µs')
const t2 = process.hrtime.bigint()
const seen2 = new Set()
const f = async (body, signature) => {
  if (!/^[0-9A-Fa-f]{64}$/.test(signature)) throw 1
  if (!timingSafeEqual(createHmac('sha256', S).update(body).digest(), Buffer.from(signature, 'hex'))) throw 2
  const e = JSON.parse(body.toString())
  if (!seen2.has(e.event_id)) seen2.add(e.event_id)
}
for (const { body, signature } of evs) await f(body, signature)
console.log('baseline async', (Number(process.hrtime.bigint() - t2) / evs.length / 1000).toFixed(2), 'µs')
