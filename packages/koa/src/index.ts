export { type KoaReceiver, type KoaWebhookContext, type KoaWebhooksOptions, koaWebhooks } from './adapter.js'
export { type KoaHealthContext, koaHealth } from './health.js'
