export { type KoaReceiver, type KoaWebhookContext, type KoaWebhooksOptions, koaWebhooks } from './adapter.js'
