import { webhooks } from '../../lib/webhooks'

export const runtime = 'nodejs'
export const POST = (request: Request) => webhooks.handle(request)
