// Receives the payment service's webhooks at POST /webhooks on Deno.serve: core's handle() takes the
// Request and returns the Response. Settings: PORT (3000), HOST (127.0.0.1), WEBHOOK_SECRET (whsec_demo).
import { createWebhooks, memoryStore } from '@payhooks/core'

const webhooks = createWebhooks({ secret: Deno.env.get('WEBHOOK_SECRET') || 'whsec_demo', store: memoryStore() })
  .on('transaction_settled', (event) => {
    const { transaction_id, settlement_amount, settlement_date } = event.data
    console.log(`${event.event_id}: ${transaction_id} settled ${settlement_amount} on ${settlement_date}`)
  })
  .on('transaction_returned', (event) => {
    const { transaction_id, settlement_code, settlement_description } = event.data
    console.log(`${event.event_id}: ${transaction_id} returned ${settlement_code} (${settlement_description})`)
  })
  .onError((error) => console.log(`rejected (${error.status} ${error.code}): ${error.message}`))

Deno.serve(
  {
    port: Number(Deno.env.get('PORT') ?? 3000),
    hostname: Deno.env.get('HOST') ?? '127.0.0.1',
    onListen: ({ hostname, port }) => console.log(`listening on http://${hostname}:${port}/webhooks`),
  },
  (request) =>
    new URL(request.url).pathname === '/webhooks'
      ? webhooks.handle(request)
      : new Response('POST signed webhooks to /webhooks\n', { status: 404 }),
)
