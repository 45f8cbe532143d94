import { createWebhooks, memoryStore, sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'

const S = 's'
const evs = []
for (let i = 0; i < 200000; i++) {
  const body = Buffer.from(
    JSON.stringify({ ...sampleEvent('transaction_settled', { eventId: `e${i}` }), event_type: 'x' }),
  )
  evs.push({ body, signature: await sign(S, body) })
}
const w = createWebhooks({ secret: S, store: memoryStore({ maxEntries: 1e6 }) })
w.on('x', async () => {})
const t = process.hrtime.bigint()
for (const { body, signature } of evs) await w.receive({ body, getHeader: () => signature })
console.log((Number(process.hrtime.bigint() - t) / evs.length / 1000).toFixed(2), 'µs')
