import { Module } from '@nestjs/common'
import { PaymentWebhooks } from './payment-webhooks.service.js'
import { WebhooksController } from './webhooks.controller.js'

@Module({ controllers: [WebhooksController], providers: [PaymentWebhooks] })
export class AppModule {}
