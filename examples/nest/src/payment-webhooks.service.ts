import { Injectable, Logger } from '@nestjs/common'
import { createWebhooks } from '@payhooks/core'
import { expressWebhooks } from '@payhooks/express'

/** The payment service's webhooks: the receiver, its handlers, and the Express handler the controller calls. */
@Injectable()
export class PaymentWebhooks {
  private readonly logger = new Logger('PaymentWebhooks')
  readonly receiver = createWebhooks({ secret: process.env.WEBHOOK_SECRET || 'whsec_demo' })
  readonly handle = expressWebhooks(this.receiver)

  constructor() {
    this.receiver
      .on('transaction_settled', (event) => {
        const { transaction_id, settlement_amount, settlement_date } = event.data
        this.logger.log(
          `${event.event_type} ${event.event_id}: ${transaction_id} settled ${settlement_amount} on ${settlement_date}`,
        )
      })
      .on('transaction_returned', (event) => {
        const { transaction_id, settlement_code, settlement_description } = event.data
        this.logger.log(
          `${event.event_type} ${event.event_id}: ${transaction_id} returned ${settlement_code} (${settlement_description})`,
        )
      })
      .on('merchant_activated_for_payment_type', (event) => {
        const { company_name, payment_type, merchant_key } = event.data
        this.logger.log(
          `${event.event_type} ${event.event_id}: ${company_name} can take ${payment_type} (${merchant_key})`,
        )
      })
      .on('sale_created_from_batch', (event) => {
        const { transaction_id, batch_id, outcome } = event.data
        this.logger.log(
          `${event.event_type} ${event.event_id}: sale ${transaction_id} of batch ${batch_id}: ${outcome?.result}`,
        )
      })
      .onError((error) => this.logger.error(`rejected (${error.status} ${error.code}): ${error.message}`))
  }
}
