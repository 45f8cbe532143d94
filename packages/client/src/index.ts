export type {
  AuthApi,
  ClientAuth,
  ClientOptions,
  ClientTokenInput,
  MerchantAuth,
  PayhooksClient,
  RequestOptions,
  ResellerAuth,
  ResellerClient,
  ResellerClientOptions,
  ResellerScopeOptions,
  ResellerSubscriptionsApi,
  SendTestInput,
  SubscriptionsApi,
  WebhooksApi,
} from './api.js'
export { createClient, DEFAULT_TIMEOUT_MS } from './client.js'
export {
  ApiError,
  InvalidRequestError,
  InvalidResponseError,
  type Issue,
  NetworkError,
  PayhooksClientError,
  type SearchedScope,
  TimeoutError,
} from './errors.js'
export type {
  ClientToken,
  CreatedSubscription,
  Subscription,
  SubscriptionInput,
  SubscriptionList,
  TestWebhookResult,
} from './schemas.js'
export { MERCHANT_ID_HEADER } from './transport.js'
