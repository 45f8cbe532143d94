// The public shapes of the client: its options and calls. The client itself is in client.ts.
import type {
  ClientToken,
  CreatedSubscription,
  Subscription,
  SubscriptionInput,
  SubscriptionList,
  TestWebhookResult,
} from './schemas.js'

/** Reseller authorization: one key for all of the reseller's merchants (spec 5). */
export interface ResellerAuth {
  /** The reseller API key: digits, `|`, then a string, such as `12|Xk3…`. */
  resellerKey: string
  username?: never
  apiKey?: never
}

/** Merchant authorization: the API username and key of one merchant account (spec 5). */
export interface MerchantAuth {
  username: string
  apiKey: string
  resellerKey?: never
}

/**
 * Either authorization scheme of the spec.
 *
 * @example
 * const auth: ClientAuth = process.env.RESELLER_KEY
 *   ? { resellerKey: process.env.RESELLER_KEY }
 *   : { username: process.env.API_USERNAME!, apiKey: process.env.API_KEY! }
 */
export type ClientAuth = ResellerAuth | MerchantAuth

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** The service's base address, such as `https://api.example.com`; paths of section 4 are appended. */
  baseUrl: string | URL
  /** `{ resellerKey }` or `{ username, apiKey }`. */
  auth: ClientAuth
  /**
   * Numeric merchant id sent as `Service-Merchant-Id` on every call except the client token. Leave
   * it out for reseller-level calls; see {@link PayhooksClient.forMerchant}.
   * @default none
   */
  merchantId?: number | string
  /**
   * Each call is aborted, and rejects with {@link TimeoutError}, when no complete answer arrives
   * within this many milliseconds.
   * @default 30_000
   */
  timeoutMs?: number
  /**
   * The fetch to send requests with.
   * @default globalThis.fetch
   */
  fetch?: typeof globalThis.fetch
}

/** Client options with a reseller key and no merchant id: calls are reseller-level. */
export interface ResellerClientOptions extends ClientOptions {
  auth: ResellerAuth
  merchantId?: undefined
}

/** Per-call options. */
export interface RequestOptions {
  /** Aborts the call; it then rejects with the signal's reason, as `fetch` does. */
  signal?: AbortSignal
  /** @default the client's `timeoutMs` */
  timeoutMs?: number
}

/** Options of a reseller-wide `subscriptions.create`: the scope must be spelled out. */
export interface ResellerScopeOptions extends RequestOptions {
  /** `'reseller'`: subscribe to the events of all of the reseller's merchants (no `Service-Merchant-Id`). */
  scope: 'reseller'
}

/** Webhook subscription calls (spec section 4). */
export interface SubscriptionsApi {
  /**
   * Creates a subscription and returns its id and `signature_secret`. `id` and `signature_secret`
   * fields of the input are not sent: the service assigns them.
   *
   * @example
   * const { id, signature_secret } = await client.subscriptions.create({
   *   url: 'https://shop.example.com/webhooks',
   *   event_types: ['transaction_settled', 'transaction_returned'],
   *   is_active: true,
   * })
   */
  create(subscription: SubscriptionInput, options?: RequestOptions): Promise<CreatedSubscription>
  /**
   * Replaces a subscription's `url`, `event_types` and `is_active` (all three are required, as on
   * create; `signature_secret` is never sent). Resolves once the service answered 204.
   *
   * @example
   * const current = await client.subscriptions.get(id)
   * await client.subscriptions.update(id, { ...current, is_active: false })
   */
  update(id: string, subscription: SubscriptionInput, options?: RequestOptions): Promise<void>
  /**
   * Reads one subscription, `signature_secret` included.
   *
   * @example
   * const { url, event_types, is_active } = await client.subscriptions.get('whs_123')
   */
  get(id: string, options?: RequestOptions): Promise<Subscription>
  /**
   * Reads every subscription: the whole answer, `total_item_count` and `data`.
   *
   * @example
   * const { total_item_count, data } = await client.subscriptions.list()
   */
  list(options?: RequestOptions): Promise<SubscriptionList>
  /**
   * Deletes a subscription. Resolves once the service answered 204.
   *
   * @example
   * await client.subscriptions.delete('whs_123')
   */
  delete(id: string, options?: RequestOptions): Promise<void>
}

/** Subscription calls of a reseller client without a merchant id: `create` must state its scope. */
export interface ResellerSubscriptionsApi extends Omit<SubscriptionsApi, 'create'> {
  /**
   * Creates a reseller-wide subscription: events of all of the reseller's merchants. The scope is
   * required so that forgetting a merchant id cannot create one by accident; for one merchant use
   * `client.forMerchant(id).subscriptions.create(...)`.
   *
   * @example
   * await client.subscriptions.create(
   *   { url, event_types: ['merchant_activated_for_payment_type'], is_active: true },
   *   { scope: 'reseller' },
   * )
   */
  create(subscription: SubscriptionInput, options: ResellerScopeOptions): Promise<CreatedSubscription>
}

/** Arguments of {@link WebhooksApi.sendTest}. */
export interface SendTestInput {
  /** Where the service posts the test message. */
  url: string
  /** Event type of the message, such as `transaction_settled`. */
  eventType: string
}

/** Message delivery calls. */
export interface WebhooksApi {
  /**
   * Asks the service to send messages again (Manually resend webhooks). The spec does not say what
   * the ids are (event ids or others): they are sent as given. Resolves once the service answered 204.
   *
   * @example
   * await client.webhooks.resend(['evt_1', 'evt_2'])
   */
  resend(ids: readonly string[], options?: RequestOptions): Promise<void>
  /**
   * Sandbox only: the service posts one message with static data of `eventType` to `url`, and
   * returns the status the target answered. The `merchant_activated_for_payment_type` test needs a
   * reseller key and no merchant id (spec 4, rule 4), which is checked before sending.
   *
   * @example
   * const { status_code } = await client.webhooks.sendTest({ url, eventType: 'transaction_settled' })
   */
  sendTest(input: SendTestInput, options?: RequestOptions): Promise<TestWebhookResult>
}

/** Arguments of {@link AuthApi.clientToken}. */
export interface ClientTokenInput {
  /** The merchant the token is for, sent as `client_id`. */
  merchantId: number | string
}

/** Authorization calls. */
export interface AuthApi {
  /**
   * Obtains a client token for a merchant with the reseller key (`POST /ps/auth/reseller_client_token`).
   * Server side only: the request body carries the reseller key, so this refuses to run where
   * `window` and `document` exist. Sent without `Service-Merchant-Id`: the merchant is in the body.
   *
   * @example
   * const { token, expires } = await client.auth.clientToken({ merchantId: 1234 })
   * if (expires.getTime() - Date.now() < 60_000) { ... }
   */
  clientToken(input: ClientTokenInput, options?: RequestOptions): Promise<ClientToken>
}

/** A client acting in one merchant's context: merchant credentials, or a reseller key with a merchant id. */
export interface PayhooksClient {
  readonly subscriptions: SubscriptionsApi
  readonly webhooks: WebhooksApi
  readonly auth: AuthApi
  /** The merchant id sent as `Service-Merchant-Id`, if any. */
  readonly merchantId: number | undefined
  /** Which scheme the Authorization header uses. */
  readonly authScheme: 'reseller' | 'basic'
  /**
   * The same client with `Service-Merchant-Id: <merchantId>` on its calls (except the client
   * token). Meant for reseller keys; with merchant credentials the header is sent too.
   *
   * @example
   * const shop = client.forMerchant(1234)
   * await shop.subscriptions.create({ url, event_types: ['transaction_settled'], is_active: true })
   */
  forMerchant(merchantId: number | string): PayhooksClient
}

/** A client with a reseller key and no merchant id: reseller-level calls. */
export interface ResellerClient extends Omit<PayhooksClient, 'subscriptions'> {
  readonly subscriptions: ResellerSubscriptionsApi
}
