export { type HonoReceiver, type HonoWebhooksOptions, honoWebhooks } from './adapter.js'
export { honoHealth } from './health.js'
