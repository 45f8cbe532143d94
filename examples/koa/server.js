// A small Koa app receiving the payment service's webhooks at POST /webhooks.
import { realpathSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { bodyParser } from '@koa/bodyparser'
import Router from '@koa/router'
import { createWebhooks } from '@payhooks/core'
import { koaHealth, koaWebhooks } from '@payhooks/koa'
import Koa from 'koa'

/** The receiver and its typed handlers; `createApp` mounts it, the entry point closes it on SIGTERM. */
export function createReceiver({ secret = process.env.WEBHOOK_SECRET || 'whsec_demo', log = console.log } = {}) {
  const webhooks = createWebhooks({ secret })
  webhooks
    .on('transaction_settled', (event) => {
      const { transaction_id, settlement_amount, settlement_date } = event.data
      log(`${event.event_type} ${event.event_id}: ${transaction_id} settled ${settlement_amount} on ${settlement_date}`)
    })
    .on('transaction_returned', (event) => {
      const { transaction_id, settlement_code, settlement_description } = event.data
      log(
        `${event.event_type} ${event.event_id}: ${transaction_id} returned ${settlement_code} (${settlement_description})`,
      )
    })
    .on('merchant_activated_for_payment_type', (event) => {
      const { company_name, payment_type, merchant_key } = event.data
      log(`${event.event_type} ${event.event_id}: ${company_name} can take ${payment_type} (${merchant_key})`)
    })
    .on('sale_created_from_batch', (event) => {
      const { transaction_id, batch_id, outcome } = event.data
      log(`${event.event_type} ${event.event_id}: sale ${transaction_id} of batch ${batch_id}: ${outcome?.result}`)
    })
    .onError((error) => log(`rejected (${error.status} ${error.code}): ${error.message}`))
  return webhooks
}

/**
 * The app, receiving at POST /webhooks with `webhooks` (by default a receiver of its own on `secret`).
 * @param {{ secret?: string, log?: (line: string) => void, webhooks?: ReturnType<typeof createReceiver> }} [options]
 */
export function createApp({ secret, log, webhooks = createReceiver({ secret, log }) } = {}) {
  const webhookRoutes = new Router()
  webhookRoutes.post('/webhooks', koaWebhooks(webhooks))
  const router = new Router()
  router.get('/ready', koaHealth(webhooks)) // the readiness probe: 503 once shutting down
  router.get('/', (ctx) => {
    ctx.body = 'POST signed webhooks to /webhooks\n'
  })
  const app = new Koa()
  // The webhook route first: it reads the body itself, under the receiver's deadline (a body still trickling in
  // is answered 408 in time) and its size limit. The rest of the app parses JSON after it.
  app
    .use(webhookRoutes.routes())
    .use(webhookRoutes.allowedMethods())
    .use(bodyParser())
    .use(router.routes())
    .use(router.allowedMethods())
  return app
}

/** Says which secret signatures are checked with: a receiver on the demo secret rejects real deliveries. */
function secretNotice() {
  return process.env.WEBHOOK_SECRET
    ? 'verifying signatures with WEBHOOK_SECRET'
    : "WEBHOOK_SECRET is not set: verifying signatures with the demo secret whsec_demo; set WEBHOOK_SECRET to your subscription's signature_secret"
}

if (process.argv[1] && realpathSync(process.argv[1]) === import.meta.filename) {
  const port = Number(process.env.PORT) || 3000
  const host = process.env.HOST || '127.0.0.1'
  const webhooks = createReceiver()
  const server = createApp({ webhooks }).listen(port, host, () => {
    console.log(`listening on http://${host}:${port}/webhooks`)
    console.log(secretNotice())
  })
  // On SIGTERM (a deploy, a scale-down), in the order of core's README "Shutting down": GET /ready answers 503 at
  // once, so the balancer stops sending here, while deliveries still arriving are handled; after a grace (a few of
  // the balancer's probe periods in production; SHUTDOWN_GRACE_MS, 2 s by default here) the server stops accepting,
  // then the receiver lets running handlers finish for up to 8 s (aborting the signal of any still running, which
  // keep their events until they settle or the process exits: the retry runs them after) and the process exits.
  const graceMs = Number(process.env.SHUTDOWN_GRACE_MS) >= 0 ? Number(process.env.SHUTDOWN_GRACE_MS) : 2000
  process.once('SIGTERM', async () => {
    webhooks.drain()
    await sleep(graceMs)
    const closed = new Promise((resolve) => server.close(resolve))
    await Promise.race([closed, sleep(webhooks.deadlineMs + 1000)]) // requests already in get their answer
    await webhooks.close({ timeoutMs: 8000 })
    process.exit(0)
  })
}
