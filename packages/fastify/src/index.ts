export { type FastifyHealthReply, fastifyHealth } from './health.js'
export { type FastifyReceiver, type FastifyWebhooksOptions, fastifyWebhooks } from './plugin.js'
