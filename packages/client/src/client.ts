import * as v from 'valibot'
import { type ClientAuth, type ResellerAuth, type ResolvedAuth, resolveAuth } from './auth.js'
import { ApiError, InvalidRequestError, InvalidResponseError, NetworkError, TimeoutError } from './errors.js'
import {
  type ClientToken,
  type CreatedSubscription,
  clientTokenResponseSchema,
  createdResponseSchema,
  idSchema,
  resendIdsSchema,
  type Subscription,
  type SubscriptionInput,
  type SubscriptionList,
  subscriptionInputSchema,
  subscriptionListSchema,
  subscriptionResponseSchema,
  type TestWebhookResult,
  testWebhookInputSchema,
  testWebhookResponseSchema,
  toIssues,
} from './schemas.js'

/**
 * Default of {@link ClientOptions.timeoutMs}: 30 seconds.
 *
 * @example
 * createClient({ baseUrl, auth, timeoutMs: 2 * DEFAULT_TIMEOUT_MS })
 */
export const DEFAULT_TIMEOUT_MS = 30_000
const MAX_TIMEOUT_MS = 2_147_483_647

/**
 * Header that puts a reseller-key call in a merchant's context (spec 5); the client sets it from
 * `merchantId`.
 *
 * @example
 * request.headers.get(MERCHANT_ID_HEADER) // '1234'
 */
export const MERCHANT_ID_HEADER = 'Service-Merchant-Id'

/** The event type whose test the spec reserves to reseller authorization without a merchant id (section 4, rule 4). */
const RESELLER_ONLY_TEST = 'merchant_activated_for_payment_type'

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

interface Config {
  baseUrl: string
  auth: ResolvedAuth
  timeoutMs: number
  fetch: typeof globalThis.fetch | undefined
}

interface Call {
  operation: string
  method: 'GET' | 'POST' | 'PUT' | 'DELETE'
  path: string
  body?: unknown
  merchantId: number | undefined
  options: RequestOptions | undefined
}

function checkTimeout(value: unknown, where: string): number {
  if (typeof value !== 'number' || !(value > 0 && value <= MAX_TIMEOUT_MS)) {
    throw new RangeError(`${where}: timeoutMs must be a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS}`)
  }
  return value
}

function checkMerchantId(value: unknown, where: string): number {
  const id = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) {
    throw new TypeError(`${where}: merchant id must be a positive integer (the numeric merchant id)`)
  }
  return id
}

function checkBaseUrl(value: unknown): string {
  let url: URL
  try {
    url = new URL(String(value))
  } catch {
    throw new TypeError('createClient: baseUrl must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError('createClient: baseUrl must be an http(s) URL')
  }
  if (url.username || url.password) throw new TypeError('createClient: baseUrl must not carry credentials; use auth')
  if (url.search || url.hash) throw new TypeError('createClient: baseUrl must not have a query or a fragment')
  return url.href.replace(/\/+$/, '')
}

function checkInput<S extends v.GenericSchema>(operation: string, schema: S, value: unknown): v.InferOutput<S> {
  const result = v.safeParse(schema, value, { abortEarly: false })
  if (!result.success) throw new InvalidRequestError(operation, toIssues(result.issues))
  return result.output
}

function isBrowserLike(): boolean {
  const scope = globalThis as { window?: unknown; document?: unknown }
  return typeof scope.window !== 'undefined' && typeof scope.document !== 'undefined'
}

/** Fields the service assigns; a subscription read and passed back in must not send them. */
function subscriptionBody(input: Record<string, unknown>): Record<string, unknown> {
  const { id: _id, signature_secret: _secret, ...body } = input
  return body
}

/** Sends one request; resolves with the answer text of a 2XX, rejects with a typed error otherwise. */
async function send(config: Config, call: Call): Promise<{ status: number; text: string }> {
  const { operation, method, path, options } = call
  const timeoutMs = options?.timeoutMs === undefined ? config.timeoutMs : checkTimeout(options.timeoutMs, operation)
  const callerSignal = options?.signal
  callerSignal?.throwIfAborted()
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout
  const headers: Record<string, string> = { accept: 'application/json', authorization: config.auth.header }
  if (call.merchantId !== undefined) headers[MERCHANT_ID_HEADER] = String(call.merchantId)
  let body: string | undefined
  if (call.body !== undefined) {
    body = JSON.stringify(call.body)
    headers['content-type'] = 'application/json'
  }
  const redact = config.auth.redact
  let response: Response
  let text: string
  try {
    // Redirects are not followed: the Authorization header (and the token call's body) must not move elsewhere.
    response = await (config.fetch ?? globalThis.fetch)(`${config.baseUrl}${path}`, {
      method,
      headers,
      body,
      signal,
      redirect: 'manual',
    })
    text = await response.text()
  } catch (error) {
    if (callerSignal?.aborted) throw callerSignal.reason
    if (timeout.aborted) throw new TimeoutError(operation, method, path, timeoutMs)
    const cause = (error as { cause?: { message?: unknown } } | undefined)?.cause
    const detail = typeof cause?.message === 'string' ? cause.message : String(error)
    throw new NetworkError(operation, method, path, redact(detail.split('\n')[0] ?? ''), error)
  }
  if (response.status < 200 || response.status > 299) {
    throw new ApiError(operation, method, path, response.status, response.statusText, redact(text))
  }
  return { status: response.status, text }
}

async function sendJson<S extends v.GenericSchema>(config: Config, call: Call, schema: S): Promise<v.InferOutput<S>> {
  const { status, text } = await send(config, call)
  const fail = (issues: { path: string; message: string }[]) =>
    new InvalidResponseError(call.operation, call.method, call.path, status, config.auth.redact(text), issues)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw fail([{ path: '', message: text === '' ? 'empty body, expected JSON' : 'not JSON' }])
  }
  const result = v.safeParse(schema, json, { abortEarly: false })
  if (!result.success) throw fail(toIssues(result.issues))
  return result.output
}

function build(config: Config, merchantId: number | undefined): PayhooksClient {
  const call = (operation: string, method: Call['method'], path: string, options?: RequestOptions, body?: unknown) => ({
    operation,
    method,
    path,
    body,
    merchantId,
    options,
  })
  const subscriptionPath = (operation: string, id: string) =>
    `/ps/webhook/subscription/${encodeURIComponent(checkInput(operation, idSchema, id))}`

  function createScope(options: RequestOptions | ResellerScopeOptions | undefined): void {
    const op = 'subscriptions.create'
    const scope = (options as { scope?: unknown } | undefined)?.scope
    if (scope !== undefined && scope !== 'reseller') throw new TypeError(`${op}: scope must be 'reseller' or left out`)
    if (merchantId !== undefined) {
      if (scope === 'reseller') {
        throw new TypeError(
          `${op}: scope 'reseller' conflicts with merchant id ${merchantId}; use a client without merchantId for a reseller-wide subscription`,
        )
      }
    } else if (config.auth.scheme === 'reseller') {
      if (scope !== 'reseller') {
        throw new TypeError(
          `${op}: with a reseller key and no merchant id this would subscribe to the events of ALL your merchants; pass { scope: 'reseller' } if that is meant, or set merchantId / use client.forMerchant(id)`,
        )
      }
    } else if (scope === 'reseller') {
      throw new TypeError(
        `${op}: scope 'reseller' needs a reseller key; merchant credentials act for their own merchant`,
      )
    }
  }

  const subscriptions: SubscriptionsApi = {
    async create(subscription, options) {
      const op = 'subscriptions.create'
      createScope(options)
      const body = subscriptionBody(checkInput(op, subscriptionInputSchema, subscription))
      const answer = await sendJson(
        config,
        call(op, 'POST', '/ps/webhook/subscription', options, body),
        createdResponseSchema,
      )
      return answer.data
    },
    async update(id, subscription, options) {
      const op = 'subscriptions.update'
      const path = subscriptionPath(op, id)
      const body = subscriptionBody(checkInput(op, subscriptionInputSchema, subscription))
      await send(config, call(op, 'PUT', path, options, body))
    },
    async get(id, options) {
      const op = 'subscriptions.get'
      const answer = await sendJson(
        config,
        call(op, 'GET', subscriptionPath(op, id), options),
        subscriptionResponseSchema,
      )
      return answer.data
    },
    async list(options) {
      return sendJson(
        config,
        call('subscriptions.list', 'GET', '/ps/webhook/subscriptions', options),
        subscriptionListSchema,
      )
    },
    async delete(id, options) {
      const op = 'subscriptions.delete'
      await send(config, call(op, 'DELETE', subscriptionPath(op, id), options))
    },
  }

  const webhooks: WebhooksApi = {
    async resend(ids, options) {
      const op = 'webhooks.resend'
      const body = { ids: checkInput(op, resendIdsSchema, ids) }
      await send(config, call(op, 'PUT', '/ps/webhook/manually_resend_webhooks', options, body))
    },
    async sendTest(input, options) {
      const op = 'webhooks.sendTest'
      const { url, eventType, ...extra } = checkInput(op, testWebhookInputSchema, input)
      if (eventType === RESELLER_ONLY_TEST && (config.auth.scheme !== 'reseller' || merchantId !== undefined)) {
        throw new TypeError(
          `${op}: the ${RESELLER_ONLY_TEST} test needs a reseller key and no merchant id (spec section 4, rule 4)`,
        )
      }
      const body = { ...extra, url, event_type: eventType }
      const answer = await sendJson(
        config,
        call(op, 'POST', '/ps/webhook/subscription/test', options, body),
        testWebhookResponseSchema,
      )
      return answer.data
    },
  }

  const auth: AuthApi = {
    async clientToken(input, options) {
      const op = 'auth.clientToken'
      if (isBrowserLike()) {
        throw new Error(
          `${op} is server-side only: its request carries the reseller key, which must never reach a browser (spec section 4, rule 5)`,
        )
      }
      if (config.auth.scheme !== 'reseller' || config.auth.resellerKey === undefined) {
        throw new TypeError(`${op}: needs a reseller key (auth: { resellerKey })`)
      }
      const clientId = checkMerchantId(input?.merchantId, op)
      const body = { client_id: clientId, api_key: config.auth.resellerKey }
      const answer = await sendJson(
        config,
        { ...call(op, 'POST', '/ps/auth/reseller_client_token', options, body), merchantId: undefined },
        clientTokenResponseSchema,
      )
      return answer.data
    },
  }

  return {
    subscriptions,
    webhooks,
    auth,
    merchantId,
    authScheme: config.auth.scheme,
    forMerchant: (id) => build(config, checkMerchantId(id, 'forMerchant')),
  }
}

/**
 * Creates a client for the webhook subscription API, on the built-in `fetch`. Calls are never
 * retried: create, resend and the test webhook are not idempotent, and a timed-out call may still
 * have taken effect. Failures reject with {@link ApiError} (non-2XX), {@link InvalidResponseError},
 * {@link TimeoutError}, {@link NetworkError} or, before anything is sent, {@link InvalidRequestError}.
 *
 * @example
 * // A reseller acting for one merchant:
 * const client = createClient({
 *   baseUrl: 'https://api.example.com',
 *   auth: { resellerKey: process.env.RESELLER_KEY! },
 *   merchantId: 1234,
 * })
 * const { id, signature_secret } = await client.subscriptions.create({
 *   url: 'https://shop.example.com/webhooks',
 *   event_types: ['transaction_settled'],
 *   is_active: true,
 * })
 *
 * @example
 * // Merchant credentials: `Authorization: basic <username>:<key>`, not base 64.
 * const client = createClient({ baseUrl, auth: { username: 'shop', apiKey: process.env.API_KEY! } })
 * const { data } = await client.subscriptions.list()
 */
export function createClient(options: ResellerClientOptions): ResellerClient
export function createClient(options: ClientOptions): PayhooksClient
export function createClient(options: ClientOptions): PayhooksClient | ResellerClient {
  if (typeof options !== 'object' || options === null) throw new TypeError('createClient: options are required')
  const config: Config = {
    baseUrl: checkBaseUrl(options.baseUrl),
    auth: resolveAuth(options.auth),
    timeoutMs: options.timeoutMs === undefined ? DEFAULT_TIMEOUT_MS : checkTimeout(options.timeoutMs, 'createClient'),
    fetch: options.fetch,
  }
  if (config.fetch !== undefined && typeof config.fetch !== 'function') {
    throw new TypeError('createClient: fetch must be a function')
  }
  const merchantId = options.merchantId === undefined ? undefined : checkMerchantId(options.merchantId, 'createClient')
  return build(config, merchantId)
}
