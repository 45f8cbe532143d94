export {
  type ExpressReceiver,
  type ExpressWebhooksOptions,
  expressWebhooks,
  keepRawBody,
} from './adapter.js'
