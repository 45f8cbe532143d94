import { createHmac, randomBytes, randomInt } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Clock, createManualClock, isManualClock, realClock } from './clock.js'
import { sampleEvent, samples } from './samples.js'
import {
  type Caller,
  checkCredentials,
  defaultSandboxCredentials,
  type SandboxCredentials,
  SandboxHttpError,
  type SandboxMerchant,
  type SandboxReseller,
} from './sandbox-auth.js'
import {
  DeliveryEngine,
  HOUR_MS,
  postSigned,
  type ResolvedChaos,
  type SandboxDelivery,
  type SandboxLogEntry,
  serializeEvent,
} from './sandbox-delivery.js'
import { createSandboxHandler } from './sandbox-http.js'
import {
  parseSubscriptionBody,
  RESELLER_SCOPED_EVENTS,
  type SandboxSubscription,
  type SubscriptionFields,
  SubscriptionStore,
} from './sandbox-subscriptions.js'

/** Chaos settings: how often messages are duplicated or delayed. */
export interface SandboxChaosOptions {
  /**
   * Seed of the pseudo-random choices: the same seed and the same calls give the same chaos.
   * @default a random seed, readable as `sandbox.chaos.seed`
   */
  seed?: number
  /**
   * Share of deliveries whose first send also goes out a second time: half of them together with
   * the first send (concurrently), half after a random delay of up to `maxDelayMs`, whatever the
   * first send's answer.
   * @default 0.2
   */
  duplicateRate?: number
  /**
   * Share of deliveries whose first send is held back a random 1 to `maxDelayMs` ms, so messages
   * overtake each other.
   * @default 0.3
   */
  reorderRate?: number
  /**
   * Longest chaos delay, in clock milliseconds. Below one hour, so chaos never moves the retry grid.
   * @default 2000
   */
  maxDelayMs?: number
}

/** Options of {@link createSandbox}. */
export interface SandboxOptions {
  /**
   * Reseller accounts (`Authorization: reseller <key>`).
   * @default [{ key: '1001|sandbox-reseller-key', merchantIds: [1234, 5678] }]
   */
  resellers?: SandboxReseller[]
  /**
   * Merchant accounts (`Authorization: basic <username>:<apiKey>`).
   * @default merchants 1234 (merchant1234 / sandbox-merchant-key-1234) and 5678 (merchant5678 / sandbox-merchant-key-5678)
   */
  merchants?: SandboxMerchant[]
  /**
   * Secret of test webhooks sent to a url none of the caller's subscriptions uses.
   * @default 'sandbox-test-secret'
   */
  testSecret?: string
  /**
   * Time source. `'manual'` creates a {@link createManualClock} that moves only with `sandbox.advance`.
   * @default realClock
   */
  clock?: Clock | 'manual'
  /**
   * Duplicate and reorder deliveries; `true` uses the default {@link SandboxChaosOptions}.
   * @default false
   */
  chaos?: boolean | SandboxChaosOptions
  /**
   * How long a receiver has to answer; later counts as a failure (spec 6.1: 10 seconds).
   * @default 10_000
   */
  deliveryTimeoutMs?: number
  /**
   * Events kept in the log; beyond it the oldest finished ones are dropped.
   * @default 10_000
   */
  logLimit?: number
  /**
   * Lifetime of client tokens.
   * @default 3_600_000 (one hour)
   */
  clientTokenTtlMs?: number
  /**
   * Receives one line per send and the listening banner. Silent without it.
   * @default undefined
   */
  logger?: (line: string) => void
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

/** What the HTTP layer needs from the sandbox. */
export interface SandboxCore {
  credentials: SandboxCredentials
  store: SubscriptionStore
  engine: DeliveryEngine
  clock: Clock
  emit: Sandbox['emit']
  advance: Sandbox['advance']
  deliveryTimeoutMs: number
  subscriptionDeleted(id: string): void
  sendTest(caller: Caller, url: string, eventType: string): Promise<{ status?: number; error?: string }>
  clientToken(caller: Caller, merchantId: number): { token: string; expires: string }
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

function resolveChaos(chaos: SandboxOptions['chaos']): ResolvedChaos | undefined {
  if (!chaos) return undefined
  const options = chaos === true ? {} : chaos
  const resolved: ResolvedChaos = {
    seed: options.seed ?? randomInt(2 ** 31),
    duplicateRate: options.duplicateRate ?? 0.2,
    reorderRate: options.reorderRate ?? 0.3,
    maxDelayMs: options.maxDelayMs ?? 2000,
  }
  const rate = (value: number) => value >= 0 && value <= 1
  if (!Number.isInteger(resolved.seed)) throw new TypeError('createSandbox: chaos.seed must be an integer')
  if (!rate(resolved.duplicateRate) || !rate(resolved.reorderRate)) {
    throw new RangeError('createSandbox: chaos rates must be between 0 and 1')
  }
  if (!(resolved.maxDelayMs >= 1 && resolved.maxDelayMs < HOUR_MS)) {
    throw new RangeError('createSandbox: chaos.maxDelayMs must be at least 1 and below one hour')
  }
  return resolved
}

/** The static message the test endpoint sends: the sample of `eventType`, in the caller's merchant context. */
function testEvent(eventType: string, merchantId: number | undefined): Record<string, unknown> {
  const sample = (samples as Record<string, { event_id: string; created_at?: string }>)[eventType]
  return sampleEvent(eventType, {
    eventId: sample?.event_id ?? `evt_test_${eventType}`,
    createdAt: sample?.created_at ?? '2026-11-02T15:00:00Z',
    ...(merchantId === undefined ? {} : { merchantId }),
  })
}

/**
 * Creates a local emulator of the payment service's webhook facility: the subscription API of
 * spec section 4 with the authorization of section 5, and deliveries signed and retried as in
 * section 6 (first send, then one retry an hour for 72 hours). Control routes live under
 * `/_sandbox/`. Errors are answered as JSON `{ error: { message } }`.
 *
 * @example
 * const sandbox = createSandbox({ clock: 'manual' })
 * const { url } = await sandbox.listen()
 * const { signature_secret } = sandbox.subscribe({ url: receiverUrl, eventTypes: ['transaction_settled'] })
 * await sandbox.emit('transaction_settled')
 * await sandbox.advance(60 * 60 * 1000) // the first retry, if the receiver failed
 * await sandbox.close()
 */
export function createSandbox(options: SandboxOptions = {}): Sandbox {
  const credentials: SandboxCredentials = {
    resellers: structuredClone(options.resellers ?? defaultSandboxCredentials.resellers),
    merchants: structuredClone(options.merchants ?? defaultSandboxCredentials.merchants),
    testSecret: options.testSecret ?? defaultSandboxCredentials.testSecret,
  }
  checkCredentials(credentials)
  const clock = options.clock === 'manual' ? createManualClock() : (options.clock ?? realClock)
  const chaos = resolveChaos(options.chaos)
  const deliveryTimeoutMs = options.deliveryTimeoutMs ?? 10_000
  const clientTokenTtlMs = options.clientTokenTtlMs ?? HOUR_MS
  const logger = options.logger
  if (!(deliveryTimeoutMs > 0)) throw new RangeError('createSandbox: deliveryTimeoutMs must be positive')
  const store = new SubscriptionStore()
  const engine = new DeliveryEngine({
    clock,
    timeoutMs: deliveryTimeoutMs,
    chaos,
    logLimit: options.logLimit ?? 10_000,
    subscription: (id) => store.get(id),
    logger,
  })
  const tokenSecret = randomBytes(32)
  const defaultMerchantId = credentials.resellers[0]?.merchantIds[0] ?? credentials.merchants[0]?.id ?? 1234
  let server: Server | undefined
  let url: string | undefined
  let closing: Promise<void> | undefined

  const emit: Sandbox['emit'] = async (eventType, data, emitOptions = {}) => {
    if (typeof eventType !== 'string' || eventType.trim() === '') {
      throw new SandboxHttpError(400, 'event_type must be a non-empty string')
    }
    if (data !== undefined && (typeof data !== 'object' || data === null || Array.isArray(data))) {
      throw new SandboxHttpError(400, 'data must be an object')
    }
    const merchantId = emitOptions.merchantId ?? defaultMerchantId
    if (!Number.isSafeInteger(merchantId) || merchantId < 0) {
      throw new SandboxHttpError(400, 'merchant_id must be a non-negative integer')
    }
    const { eventId } = emitOptions
    if (eventId !== undefined && (typeof eventId !== 'string' || eventId === '')) {
      throw new SandboxHttpError(400, 'event_id must be a non-empty string')
    }
    if (eventId !== undefined && engine.has(eventId))
      throw new SandboxHttpError(409, `event ${eventId} was emitted already`)
    const event = sampleEvent(eventType, {
      merchantId,
      createdAt: new Date(clock.now()).toISOString(),
      ...(data ? { data } : {}),
      ...(eventId ? { eventId } : {}),
    })
    return engine.dispatch(event, store.matching(eventType, merchantId, credentials.resellers), merchantId)
  }

  const advance: Sandbox['advance'] = async (ms) => {
    if (!isManualClock(clock)) throw new SandboxHttpError(409, 'the sandbox runs on a real clock; pass clock: "manual"')
    await engine.idle(false)
    await clock.advance(ms)
  }

  const core: SandboxCore = {
    credentials,
    store,
    engine,
    clock,
    emit,
    advance,
    deliveryTimeoutMs,
    subscriptionDeleted: (id) => engine.subscriptionDeleted(id),
    async sendTest(caller, targetUrl, eventType) {
      if (RESELLER_SCOPED_EVENTS.has(eventType) && !(caller.kind === 'reseller' && caller.merchantId === undefined)) {
        throw new SandboxHttpError(
          403,
          `${eventType} can only be tested with reseller authorization and no Service-Merchant-Id header`,
        )
      }
      const secret = store.ownedWithUrl(caller, targetUrl)[0]?.signature_secret ?? credentials.testSecret
      const body = serializeEvent(testEvent(eventType, caller.merchantId))
      const result = await postSigned(targetUrl, secret, body, deliveryTimeoutMs)
      logger?.(`test ${eventType} → ${targetUrl}: ${result.status ?? result.error}`)
      return result
    },
    clientToken(caller, merchantId) {
      const issued = clock.now()
      const expires = issued + clientTokenTtlMs
      const reseller = caller.kind === 'reseller' ? caller.reseller.key.split('|')[0] : undefined
      const unsigned = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({
        iss: 'payhooks-sandbox',
        sub: String(merchantId),
        reseller_id: reseller,
        iat: Math.floor(issued / 1000),
        exp: Math.floor(expires / 1000),
      })}`
      const signature = createHmac('sha256', tokenSecret).update(unsigned).digest('base64url')
      return { token: `${unsigned}.${signature}`, expires: new Date(expires).toISOString() }
    },
  }
  const handler = createSandboxHandler(core)

  const sandbox: Sandbox = {
    get url() {
      return url
    },
    clock,
    credentials,
    chaos,
    handler,
    emit,
    advance,
    subscribe(subscribeOptions) {
      const fields: SubscriptionFields = {
        url: subscribeOptions.url,
        event_types: subscribeOptions.eventTypes,
        is_active: subscribeOptions.isActive ?? true,
      }
      let owner: Caller
      if (subscribeOptions.merchantId !== undefined) {
        const merchant = credentials.merchants.find((m) => m.id === subscribeOptions.merchantId) ?? {
          id: subscribeOptions.merchantId,
          username: '',
          apiKey: '',
        }
        owner = { kind: 'merchant', merchant, merchantId: merchant.id }
      } else {
        const key = subscribeOptions.resellerKey ?? credentials.resellers[0]?.key
        const reseller = credentials.resellers.find((r) => r.key === key)
        if (!reseller) throw new TypeError('subscribe: unknown resellerKey, and no merchantId given')
        owner = { kind: 'reseller', reseller, merchantId: undefined }
      }
      // Same validation as the HTTP route, so code and HTTP subscriptions behave alike.
      return store.create(owner, parseSubscriptionBody(fields, false))
    },
    subscriptions: () => store.all(),
    async resend(eventIds) {
      const ids = typeof eventIds === 'string' ? [eventIds] : eventIds
      await Promise.all(ids.map((id) => engine.resend(id, () => true)))
    },
    idle: () => engine.idle(!isManualClock(clock)),
    log: () => engine.log(),
    deliveries: (eventId) => engine.entry(eventId)?.deliveries ?? [],
    async listen(port = 0, host = '127.0.0.1') {
      if (server) throw new Error('sandbox.listen: already listening')
      if (closing) throw new Error('sandbox.listen: the sandbox is closed')
      const listening = createServer(handler)
      server = listening
      await new Promise<void>((resolve, reject) => {
        listening.once('error', reject)
        listening.listen(port, host, () => {
          listening.off('error', reject)
          resolve()
        })
      })
      const address = listening.address() as AddressInfo
      const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
      url = `http://${shownHost}:${address.port}`
      logger?.(
        `payhooks sandbox on ${url}: reseller key ${credentials.resellers.map((r) => r.key).join(', ')}; merchants ${credentials.merchants
          .map((m) => `${m.id} (${m.username}:${m.apiKey})`)
          .join(', ')}${chaos ? `; chaos seed ${chaos.seed}` : ''}`,
      )
      return { url }
    },
    close() {
      closing ??= (async () => {
        const running = server
        await engine.close()
        if (running) {
          await new Promise<void>((resolve) => {
            running.close(() => resolve())
            running.closeAllConnections()
          })
        }
      })()
      return closing
    },
  }
  return sandbox
}
