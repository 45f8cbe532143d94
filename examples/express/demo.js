// `pnpm demo`: starts the Express example on a free loopback port, sends it every sample event signed
// (then one duplicate and one tampered body) and prints what came back. Exits 1 on any unexpected answer.
import { sampleEvent, sampleEventTypes, signedDelivery } from '@payhooks/testing'
import { createApp } from './server.js'

const secret = 'whsec_demo'
const server = createApp({ secret, log: (line) => console.log(`  handler: ${line}`) }).listen(0, '127.0.0.1')
await new Promise((resolve) => server.once('listening', resolve))
const url = `http://127.0.0.1:${server.address().port}/webhooks`
console.log(`Express example listening on ${url}\n`)

let unexpected = 0
async function send(label, { body, headers }, expected) {
  console.log(`→ ${label}`)
  const res = await fetch(url, { method: 'POST', body, headers })
  const answer = await res.json()
  const ok = res.status === expected.status && (!expected.result || answer.status === expected.result)
  if (!ok) unexpected++
  console.log(
    `← ${res.status} ${JSON.stringify(answer)}${ok ? '' : `   UNEXPECTED, wanted ${JSON.stringify(expected)}`}\n`,
  )
}

const deliveries = []
for (const type of sampleEventTypes) {
  const delivery = await signedDelivery(sampleEvent(type), secret)
  deliveries.push(delivery)
  await send(type, delivery, { status: 200, result: 'processed' })
}
const first = deliveries[0]
await send('the same delivery again (the service retries)', first, { status: 200, result: 'duplicate' })
const tampered = { body: first.body.replace('"data":', '"data": '), headers: first.headers }
await send('a tampered body (one added space)', tampered, { status: 401 })

server.close()
server.closeAllConnections()
console.log(unexpected === 0 ? 'All answers as expected.' : `${unexpected} unexpected answer(s).`)
process.exit(unexpected === 0 ? 0 : 1)
