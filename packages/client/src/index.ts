export type { ClientAuth, MerchantAuth, ResellerAuth } from './auth.js'
export {
  type AuthApi,
  type ClientOptions,
  type ClientTokenInput,
  createClient,
  DEFAULT_TIMEOUT_MS,
  MERCHANT_ID_HEADER,
  type PayhooksClient,
  type RequestOptions,
  type ResellerClient,
  type ResellerClientOptions,
  type ResellerScopeOptions,
  type ResellerSubscriptionsApi,
  type SendTestInput,
  type SubscriptionsApi,
  type WebhooksApi,
} from './client.js'
export {
  ApiError,
  InvalidRequestError,
  InvalidResponseError,
  type Issue,
  NetworkError,
  PayhooksClientError,
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
