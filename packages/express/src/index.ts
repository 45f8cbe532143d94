export {
  type ExpressMiddlewareOptions,
  type ExpressNext,
  type ExpressReceiver,
  type ExpressWebhooksOptions,
  expressWebhooks,
  keepRawBody,
} from './adapter.js'
export { expressHealth } from './health.js'
