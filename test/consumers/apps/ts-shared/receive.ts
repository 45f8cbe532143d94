// Copied into each TypeScript app as src/receive.ts: the same receiver under every module setting. An Express app
// on a loopback port is sent a signed event twice and a forged one; the answers and what the handler saw are printed.
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { createWebhooks, memoryStore, SIGNATURE_HEADER, type TransactionSettledEvent } from '@payhooks/core'
import { expressWebhooks } from '@payhooks/express'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type { Express } from 'express'

export async function receiveSignedEvent(app: Express): Promise<string> {
  const secret = 'whsec_consumer_app'
  const webhooks = createWebhooks({ secret, store: memoryStore() })
  const seen: string[] = []
  webhooks.on('transaction_settled', (event: TransactionSettledEvent) => {
    const amount: number = event.data.settlement_amount
    // @ts-expect-error a misspelt field fails to compile only when core's types resolved (not `any`)
    void event.data.settlement_amout
    seen.push(`${event.event_type} ${typeof amount}`)
  })
  app.all('/webhooks', expressWebhooks(webhooks))
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
  const statuses: number[] = []
  for (const signature of [headers[SIGNATURE_HEADER], headers[SIGNATURE_HEADER], 'v1=forged']) {
    const answer = await fetch(url, { method: 'POST', body, headers: { ...headers, [SIGNATURE_HEADER]: signature } })
    statuses.push(answer.status)
  }
  server.close()
  await webhooks.close()
  return JSON.stringify({ statuses, seen })
}
