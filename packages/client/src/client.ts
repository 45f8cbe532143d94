import * as v from 'valibot'
import type {
  AuthApi,
  ClientOptions,
  PayhooksClient,
  RequestOptions,
  ResellerClient,
  ResellerClientOptions,
  ResellerScopeOptions,
  SubscriptionsApi,
  WebhooksApi,
} from './api.js'
import { resolveAuth } from './auth.js'
import { ApiError, InvalidRequestError, type SearchedScope } from './errors.js'
import {
  clientTokenResponseSchema,
  createdResponseSchema,
  idSchema,
  resendIdsSchema,
  subscriptionInputSchema,
  subscriptionListSchema,
  subscriptionResponseSchema,
  testWebhookInputSchema,
  testWebhookResponseSchema,
  toIssues,
} from './schemas.js'
import { type Call, type Config, send, sendJson } from './transport.js'
import { checkClientOptions, checkMerchantId } from './validations.js'

/**
 * Default of {@link ClientOptions.timeoutMs}: 30 seconds.
 *
 * @example
 * createClient({ baseUrl, auth, timeoutMs: 2 * DEFAULT_TIMEOUT_MS })
 */
export const DEFAULT_TIMEOUT_MS = 30_000

/** The event type whose test the spec reserves to reseller authorization without a merchant id (section 4, rule 4). */
const RESELLER_ONLY_TEST = 'merchant_activated_for_payment_type'

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
      const path = '/ps/webhook/manually_resend_webhooks'
      try {
        await send(config, call(op, 'PUT', path, options, body))
      } catch (error) {
        if (!(error instanceof ApiError) || error.status !== 404) throw error
        const searched: SearchedScope =
          config.auth.scheme === 'reseller' && merchantId === undefined
            ? { scope: 'reseller' }
            : { scope: 'merchant', merchantId }
        throw new ApiError(op, 'PUT', path, 404, error.statusText, error.body, searched)
      }
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
  const checked = checkClientOptions(options)
  const config: Config = {
    baseUrl: checked.baseUrl,
    auth: resolveAuth(checked.auth),
    timeoutMs: checked.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: checked.fetch,
  }
  return build(config, checked.merchantId)
}
