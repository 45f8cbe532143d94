// An ES module Express app, as the README's quick start but in JavaScript: a signed event, the same event again
// and a forged one, on a loopback port.
import { createWebhooks, memoryStore, SIGNATURE_HEADER } from '@payhooks/core'
import { expressWebhooks } from '@payhooks/express'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import express from 'express'

const secret = 'whsec_consumer_app'
const webhooks = createWebhooks({ secret, store: memoryStore() })
const seen = []
webhooks.on('transaction_settled', (event) => seen.push(`${event.event_type} ${typeof event.data.settlement_amount}`))
const app = express()
app.all('/webhooks', expressWebhooks(webhooks))
const server = app.listen(0, '127.0.0.1', async () => {
  const url = `http://127.0.0.1:${server.address().port}/webhooks`
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
  const statuses = []
  for (const signature of [headers[SIGNATURE_HEADER], headers[SIGNATURE_HEADER], 'v1=forged']) {
    const answer = await fetch(url, { method: 'POST', body, headers: { ...headers, [SIGNATURE_HEADER]: signature } })
    statuses.push(answer.status)
  }
  server.close()
  await webhooks.close()
  console.log(
    JSON.stringify({ statuses, seen, build: import.meta.resolve('@payhooks/core').replace(/^.*node_modules\//, '') }),
  )
})
