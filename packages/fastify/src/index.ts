export { type FastifyReceiver, type FastifyWebhooksOptions, fastifyWebhooks } from './plugin.js'
