import { Controller, Post, type RawBodyRequest, Req, Res } from '@nestjs/common'
import type { Request, Response } from 'express'
import { PaymentWebhooks } from './payment-webhooks.service.js'

@Controller('webhooks')
export class WebhooksController {
  constructor(private readonly webhooks: PaymentWebhooks) {}

  /** Answers itself (`@Res()`): verified from `req.rawBody`, the exact bytes kept by `rawBody: true`. */
  @Post()
  receive(@Req() req: RawBodyRequest<Request>, @Res() res: Response): Promise<void> {
    return this.webhooks.handle(req, res)
  }
}
