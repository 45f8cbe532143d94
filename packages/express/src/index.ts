export {
  type ExpressMiddlewareOptions,
  type ExpressNext,
  type ExpressReceiver,
  type ExpressWebhooksOptions,
  expressWebhooks,
  keepRawBody,
} from './adapter.js'
export { type ExpressWebhookErrorsOptions, expressWebhookErrors } from './body-errors.js'
export { expressHealth } from './health.js'
