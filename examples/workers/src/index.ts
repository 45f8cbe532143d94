// A Cloudflare Worker receiving the payment service's webhooks at POST /webhooks. No nodejs_compat
// needed: core verifies signatures with Web Crypto.
import { createWebhooks, memoryStore } from '@payhooks/core'

export interface Env {
  /** The subscription's signature_secret: `npx wrangler secret put WEBHOOK_SECRET`. */
  WEBHOOK_SECRET: string
}

function createReceiver(secret: string) {
  return createWebhooks({ secret, store: memoryStore() })
    .on('transaction_settled', (event) => {
      const { transaction_id, settlement_amount, settlement_date } = event.data
      console.log(`${event.event_id}: ${transaction_id} settled ${settlement_amount} on ${settlement_date}`)
    })
    .on('transaction_returned', (event) => {
      const { transaction_id, settlement_code, settlement_description } = event.data
      console.log(`${event.event_id}: ${transaction_id} returned ${settlement_code} (${settlement_description})`)
    })
    .onError((error) => console.warn(`rejected (${error.status} ${error.code}): ${error.message}`))
}

// One receiver per isolate, made on the first request because the secret arrives with `env`.
let webhooks: ReturnType<typeof createReceiver> | undefined

export default {
  fetch(request, env) {
    if (new URL(request.url).pathname !== '/webhooks') {
      return new Response('POST signed webhooks to /webhooks\n', { status: 404 })
    }
    webhooks ??= createReceiver(env.WEBHOOK_SECRET)
    return webhooks.handle(request)
  },
} satisfies ExportedHandler<Env>
