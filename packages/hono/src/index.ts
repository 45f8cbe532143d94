export { type HonoReceiver, type HonoWebhooksOptions, honoWebhooks } from './adapter.js'
