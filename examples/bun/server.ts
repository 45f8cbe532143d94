// Receives the payment service's webhooks at POST /webhooks on Bun.serve: core's handle() takes the
// Request and returns the Response. Settings: PORT (3000), HOST (127.0.0.1), WEBHOOK_SECRET (whsec_demo).
import { createWebhooks, memoryStore } from '@payhooks/core'

const webhooks = createWebhooks({ secret: Bun.env.WEBHOOK_SECRET || 'whsec_demo', store: memoryStore() })
  .on('transaction_settled', (event) => {
    const { transaction_id, settlement_amount, settlement_date } = event.data
    console.log(`${event.event_id}: ${transaction_id} settled ${settlement_amount} on ${settlement_date}`)
  })
  .on('transaction_returned', (event) => {
    const { transaction_id, settlement_code, settlement_description } = event.data
    console.log(`${event.event_id}: ${transaction_id} returned ${settlement_code} (${settlement_description})`)
  })
  .onError((error) => console.log(`rejected (${error.status} ${error.code}): ${error.message}`))

const server = Bun.serve({
  port: Number(Bun.env.PORT ?? 3000),
  hostname: Bun.env.HOST ?? '127.0.0.1',
  routes: { '/webhooks': (request) => webhooks.handle(request) },
  fetch: () => new Response('POST signed webhooks to /webhooks\n', { status: 404 }),
})
console.log(`listening on ${server.url}webhooks`)
