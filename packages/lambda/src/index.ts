export {
  type LambdaHttpEvent,
  type LambdaHttpResult,
  type LambdaReceiver,
  lambdaWebhooks,
} from './handler.js'
