// Queue mode, as the install line's packages are meant to be used together: an Express receiver stores each
// verified event in Redis as a BullMQ job (REDIS_URL, the test's redis-server) and a worker runs the handler.
import { bullmqQueue, startWorker } from '@payhooks/bullmq'
import { createWebhooks, SIGNATURE_HEADER } from '@payhooks/core'
import { expressWebhooks } from '@payhooks/express'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import express from 'express'
import { Redis } from 'ioredis'

const secret = 'whsec_consumer_app'
const redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: null })
const name = `consumer-${process.pid}-${Date.now()}` // a queue and keys of its own on a shared server
const queue = bullmqQueue({ connection: redis, name })
const webhooks = createWebhooks({ secret, store: redisStore(redis, { keyPrefix: `${name}:` }), queue })
const errors = []
webhooks.onError((error) => errors.push(error.code))
let handled
const settled = new Promise((resolve) => (handled = resolve))
const seen = []
webhooks.on('transaction_settled', (event) => {
  seen.push(`${event.event_type} ${typeof event.data.settlement_amount}`)
  handled()
})
const worker = startWorker(webhooks, { connection: redis, name })
const app = express()
app.all('/webhooks', expressWebhooks(webhooks))
const server = app.listen(0, '127.0.0.1', async () => {
  const url = `http://127.0.0.1:${server.address().port}/webhooks`
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
  const answers = []
  for (const signature of [headers[SIGNATURE_HEADER], 'v1=forged']) {
    const answer = await fetch(url, { method: 'POST', body, headers: { ...headers, [SIGNATURE_HEADER]: signature } })
    answers.push([answer.status, (await answer.json()).status ?? null])
  }
  await settled
  server.close()
  await worker.close()
  await queue.close()
  await webhooks.close()
  await redis.quit()
  console.log(JSON.stringify({ answers, seen, errors }))
})
