import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Clock } from './clock.js'

/** A reseller account of the sandbox: its API key and the merchants it acts for. */
export interface SandboxReseller {
  /** The reseller key: a number, a pipe, then a string, as in `1001|s3cret`. */
  key: string
  /** Merchants this reseller may act for (with `Service-Merchant-Id`) and gets events of. */
  merchantIds: number[]
}

/** A merchant account of the sandbox, for `basic <username>:<apiKey>` authorization. */
export interface SandboxMerchant {
  id: number
  username: string
  apiKey: string
}

/** Accounts the sandbox accepts, and the secret of test webhooks sent to urls no subscription uses. */
export interface SandboxCredentials {
  resellers: SandboxReseller[]
  merchants: SandboxMerchant[]
  testSecret: string
}

/** A webhook subscription as the sandbox stores it: the fields of spec 2.1 plus who owns it. */
export interface SandboxSubscription {
  /** Opaque prefixed id, such as `wsub_3f9c…`. */
  id: string
  url: string
  event_types: string[]
  is_active: boolean
  signature_secret: string
  /**
   * `reseller`: created with reseller auth and no `Service-Merchant-Id`; gets the events of every
   * merchant of that reseller. `merchant`: gets the events of `merchantId` only.
   */
  scope: 'reseller' | 'merchant'
  /** The owning reseller's key, for reseller-scoped subscriptions. */
  resellerKey?: string
  /** The merchant, for merchant-scoped subscriptions. */
  merchantId?: number
}

/** One HTTP POST of a message to a subscriber. */
export interface SandboxAttempt {
  /**
   * `scheduled`: the first send or an hourly retry. `duplicate`: an extra copy sent by chaos.
   * `resend`: sent by `manually_resend_webhooks` or `sandbox.resend`.
   */
  kind: 'scheduled' | 'duplicate' | 'resend'
  /** For `scheduled` attempts: 0 for the first send, n for the retry n hours after it. */
  retry?: number
  /** Clock time the POST started, epoch milliseconds. */
  time: number
  /** The same time, ISO 8601 UTC. */
  at: string
  /** HTTP status the receiver answered, if it answered. */
  status?: number
  /** True for a 2XX within the timeout. */
  ok: boolean
  /** Why there was no status: connection refused, no answer within the timeout, and so on. */
  error?: string
  /** Real milliseconds until the status line arrived (or the failure). */
  latencyMs: number
  /** Start of the receiver's response body, up to 500 characters. */
  response?: string
  /** The `service-hmac-sha256` header sent with this attempt. */
  signature?: string
  /**
   * What the answer means, for the answers of a payhooks receiver that the status alone does not explain: a 401
   * (signature refused), `future_event` and `stale_event` (created_at outside what the receiver accepts), `parked`.
   */
  hint?: string
}

/** `pending` until a 2XX arrives (`delivered`) or the 72 hours of retries run out (`failed`). */
export type SandboxDeliveryState = 'pending' | 'delivered' | 'failed'

/** The delivery of one event to one subscription. */
export interface SandboxDelivery {
  eventId: string
  eventType: string
  subscriptionId: string
  state: SandboxDeliveryState
  /** Why a delivery failed: retries exhausted, or the subscription was deleted. */
  reason?: string
  /** Clock time of the first send (retry 0); retry n is due n hours after it. */
  firstAttemptTime: number
  /** Clock time of the next scheduled attempt, while one is scheduled. */
  nextAttemptTime?: number
  attempts: SandboxAttempt[]
}

/** One emitted event and its deliveries. */
export interface SandboxLogEntry {
  eventId: string
  eventType: string
  merchantId: number
  /** Clock time of the emit, epoch milliseconds. */
  emittedTime: number
  /** The same time, ISO 8601 UTC. */
  emittedAt: string
  /** The message (spec 2.2). */
  event: Record<string, unknown>
  /** The exact JSON text POSTed and signed. */
  body: string
  /** The `created_at` the emit was given (an event staged in the past); absent when it was stamped now. */
  createdAt?: string
  /** One per subscription that got the event, in subscription creation order. */
  deliveries: SandboxDelivery[]
}

/** A subscription as the dashboard shows it: no secret, and its owner as `reseller <id>` or `merchant <id>`. */
export interface DashboardSubscription {
  id: string
  url: string
  event_types: string[]
  is_active: boolean
  owner: string
}

/** The sandbox's clock as the dashboard reads it: its time, and whether it only moves when advanced. */
export interface DashboardClock {
  now: number
  manual: boolean
}

/**
 * The dashboard's event stream (`/_sandbox/events`): `hello` first, then `entry` (a log entry that changed),
 * `removed`, `subscriptions` (the whole list) and `clock`, each one's data as typed here.
 */
export interface DashboardEvents {
  hello: {
    clock: DashboardClock
    chaos: { seed: number } | null
    /** Event types the sandbox has samples of. */
    eventTypes: string[]
    merchantIds: number[]
    subscriptions: DashboardSubscription[]
    /** The latest entries of the log, oldest first. */
    log: SandboxLogEntry[]
    /** Entries in the whole log. */
    total: number
  }
  entry: SandboxLogEntry
  removed: { eventId: string }
  subscriptions: DashboardSubscription[]
  clock: DashboardClock
}

/** Chaos settings once defaults are applied. */
export interface ResolvedChaos {
  seed: number
  duplicateRate: number
  reorderRate: number
  maxDelayMs: number
}

/** Options of {@link Sandbox.emit}. */
export interface SandboxEmitOptions {
  /**
   * Merchant the event belongs to (`merchant_id` of the message).
   * @default the first merchant of the first reseller (1234 with the default accounts)
   */
  merchantId?: number
  /** @default a fresh `evt_<uuid>` */
  eventId?: string
  /**
   * The event's `created_at` (ISO 8601 UTC), to stage an event sent long ago: one 75 hours old rehearses the
   * outage recovery (a receiver answers 422 `stale_event`, or 200 `parked` with a durable dead-letter store, then
   * `payhooks dead-letters replay`) without faking the receiver's clock. The log entry keeps it, and the
   * dashboard marks the event.
   * @default the wall clock's now
   * @example
   * await sandbox.emit('transaction_settled', undefined, { createdAt: new Date(Date.now() - 75 * 3_600_000).toISOString() })
   */
  createdAt?: string
}

/** Options of {@link Sandbox.subscribe}. */
export interface SandboxSubscribeOptions {
  url: string
  eventTypes: string[]
  /** @default true */
  isActive?: boolean
  /** Makes a merchant-scoped subscription of this merchant. Without it, the subscription is reseller-scoped. */
  merchantId?: number
  /**
   * Reseller owning a reseller-scoped subscription.
   * @default the first reseller's key
   */
  resellerKey?: string
  /**
   * Pins the subscription's `signature_secret` (16+ characters), so a receiver configured with it keeps working
   * across sandbox restarts without `statePath`.
   * @default a new random secret
   */
  signatureSecret?: string
}

/** A running emulator of the payment service's webhook facility. */
export interface Sandbox {
  /**
   * Starts the HTTP server.
   *
   * @example
   * const { url } = await sandbox.listen() // http://127.0.0.1:<free port>
   */
  listen(port?: number, host?: string): Promise<{ url: string }>
  /** Stops the server and every pending retry; sends in flight are aborted. Safe to call twice. */
  close(): Promise<void>
  /** Base url once listening. */
  readonly url: string | undefined
  readonly clock: Clock
  /** Accounts the sandbox accepts and its test secret. */
  readonly credentials: SandboxCredentials
  /** Effective chaos settings (with the seed), or undefined when chaos is off. */
  readonly chaos: ResolvedChaos | undefined
  /**
   * The token that opens the control routes (`/_sandbox/*`, the dashboard's data) when they need
   * one: sent as `x-sandbox-token: <token>` or `authorization: Bearer <token>`, or `?token=` on GET.
   *
   * @example
   * const { url } = await sandbox.listen(4010, '0.0.0.0')
   * console.log(`dashboard: ${url}/?token=${encodeURIComponent(sandbox.controlToken)}`)
   * await fetch(`${url}/_sandbox/log`, { headers: { 'x-sandbox-token': sandbox.controlToken } })
   */
  readonly controlToken: string
  /**
   * Whether every control request must carry {@link Sandbox.controlToken}: `requireControlToken`, or
   * else true once the sandbox listens on an address other than loopback. (In auto mode a request
   * arriving on a non-loopback address needs it too, wherever the handler is mounted.)
   */
  readonly controlTokenRequired: boolean
  /** The node:http request listener, to mount the sandbox in a server of your own. */
  readonly handler: (request: IncomingMessage, response: ServerResponse) => void
  /**
   * Emits an event: a realistic message of `eventType` (the sample of spec 6 with a fresh
   * `event_id`, `data` merged over the sample's) delivered to every active subscription that lists
   * the type and covers the merchant. Resolves with its log entry once the sends due now completed.
   *
   * @example
   * const { eventId, deliveries } = await sandbox.emit('transaction_settled', { settlement_amount: 12.5 })
   */
  emit(eventType: string, data?: Record<string, unknown>, options?: SandboxEmitOptions): Promise<SandboxLogEntry>
  /**
   * Creates a subscription from code, as `POST /ps/webhook/subscription` would.
   *
   * @example
   * const { signature_secret } = sandbox.subscribe({ url, eventTypes: ['transaction_settled'] })
   */
  subscribe(options: SandboxSubscribeOptions): SandboxSubscription
  /** Every subscription, whoever owns it. */
  subscriptions(): SandboxSubscription[]
  /** Sends events again to every subscription they were delivered to. Resolves when the sends completed. */
  resend(eventIds: string | string[]): Promise<void>
  /**
   * Moves a manual clock forward, running every send due up to then in time order; resolves once
   * they completed. Throws with a real clock.
   *
   * @example
   * await sandbox.advance(72 * 60 * 60 * 1000)
   */
  advance(ms: number): Promise<void>
  /** Resolves once no send is running and (real clock) no chaos-delayed send is waiting. */
  idle(): Promise<void>
  /** Every logged event with its deliveries and attempts, oldest first (a snapshot). */
  log(): SandboxLogEntry[]
  /** The deliveries of one event (a snapshot); empty when unknown. */
  deliveries(eventId: string): SandboxDelivery[]
}
