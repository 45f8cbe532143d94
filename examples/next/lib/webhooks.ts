// The receiver and its handlers, created once per server process.
import { createWebhooks } from '@payhooks/core'
import { addTestHooks } from './test-hooks'

export const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET || 'whsec_demo' })

webhooks
  .on('transaction_settled', (event) => {
    const { transaction_id, settlement_amount, settlement_date } = event.data
    console.log(
      `${event.event_type} ${event.event_id}: ${transaction_id} settled ${settlement_amount} on ${settlement_date}`,
    )
  })
  .on('transaction_returned', (event) => {
    const { transaction_id, settlement_code, settlement_description } = event.data
    console.log(
      `${event.event_type} ${event.event_id}: ${transaction_id} returned ${settlement_code} (${settlement_description})`,
    )
  })
  .on('merchant_activated_for_payment_type', (event) => {
    const { company_name, payment_type, merchant_key } = event.data
    console.log(`${event.event_type} ${event.event_id}: ${company_name} can take ${payment_type} (${merchant_key})`)
  })
  .on('sale_created_from_batch', (event) => {
    const { transaction_id, batch_id, outcome } = event.data
    console.log(
      `${event.event_type} ${event.event_id}: sale ${transaction_id} of batch ${batch_id}: ${outcome?.result}`,
    )
  })
  .onError((error) => console.error(`rejected (${error.status} ${error.code}): ${error.message}`))

// Only for this repository's tests (handlers that fail or run slow on purpose): leave it out when you copy this file.
if (process.env.PAYHOOKS_TEST_HOOKS === '1') addTestHooks(webhooks)
