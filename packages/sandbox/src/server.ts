import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { sampleEvent } from '@payhooks/testing'
import type { Caller } from './auth.js'
import { isManualClock } from './clock.js'
import { type DashboardParts, firstView, liveSource, noDeliveryReason } from './dashboard.js'
import { DeliveryEngine } from './delivery.js'
import { SandboxHttpError } from './errors.js'
import { EventHub } from './events.js'
import type { ControlGuard } from './guard.js'
import { createSandboxHandler, type SandboxCore } from './http.js'
import { resolveOptions, type SandboxOptions } from './options.js'
import { postSigned, serializeEvent } from './send.js'
import { loadState, lockState, saveState } from './state.js'
import {
  parseSubscriptionBody,
  RESELLER_SCOPED_EVENTS,
  type SubscriptionFields,
  SubscriptionStore,
} from './subscriptions.js'
import { isLoopbackAddress } from './targets.js'
import { createTokenIssuer } from './tokens.js'
import type { Sandbox } from './types.js'

/**
 * The `created_at` of every message the sandbox makes: the wall clock's now, whatever the sandbox's clock says. A
 * receiver ages events by its own clock, so a stamp from a manual clock moved ahead would be answered 503
 * `future_event` on every attempt, and one left behind `stale_event` once 73 hours old. The sandbox's clock drives
 * only the retry schedule.
 */
/** A `created_at` an emit may be given: ISO 8601 in UTC, with or without fractions of a second. */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/

function wallClockStamp(): string {
  return new Date(Date.now()).toISOString()
}

/**
 * The static message the test endpoint sends: the sample of `eventType`, in the caller's merchant
 * context, with a fresh `event_id` (a fixed one would make every test after the first a duplicate)
 * and `created_at` the wall clock's now (a fixed one would be taken for a replay once it is 73 hours old).
 */
function testEvent(eventType: string, merchantId: number | undefined): Record<string, unknown> {
  return sampleEvent(eventType, {
    eventId: `evt_test_${randomUUID()}`,
    createdAt: wallClockStamp(),
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
  const {
    credentials,
    clock,
    chaos,
    deliveryTimeoutMs,
    clientTokenTtlMs,
    logLimit,
    logger,
    controlToken,
    requireControlToken,
    statePath,
  } = resolveOptions(options)
  const store = new SubscriptionStore(() => {
    if (statePath !== undefined) {
      try {
        saveState(statePath, store.all())
      } catch (error) {
        logger?.(`! cannot write ${statePath}: ${(error as { code?: string }).code ?? (error as Error).message}`)
      }
    }
    hub.subscriptionsChanged()
  })
  const unlockState = statePath === undefined ? undefined : lockState(statePath)
  if (statePath !== undefined) {
    try {
      store.restore(loadState(statePath))
      // Written once now, so an unwritable path fails at start rather than at the first subscription.
      saveState(statePath, store.all())
    } catch (error) {
      unlockState?.()
      if (error instanceof TypeError) throw error
      const code = (error as { code?: string }).code ?? 'error'
      throw new TypeError(`createSandbox: cannot write statePath ${statePath} (${code})`)
    }
  }
  const engine = new DeliveryEngine({
    clock,
    timeoutMs: deliveryTimeoutMs,
    chaos,
    logLimit,
    subscription: (id) => store.get(id),
    logger,
    onChange: (eventId) => hub.entryChanged(eventId),
  })
  const dashboard: DashboardParts = { engine, store, clock, chaos, credentials }
  const hub = new EventHub(liveSource(dashboard))
  const guard: ControlGuard = { token: controlToken, mode: requireControlToken, exposed: false }
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
    const { createdAt } = emitOptions
    if (
      createdAt !== undefined &&
      (typeof createdAt !== 'string' || !ISO_UTC.test(createdAt) || !(Date.parse(createdAt) >= 0))
    ) {
      throw new SandboxHttpError(400, 'created_at must be an ISO 8601 UTC time such as 2026-11-22T10:00:00Z')
    }
    const event = sampleEvent(eventType, {
      merchantId,
      createdAt: createdAt ?? wallClockStamp(),
      ...(data ? { data } : {}),
      ...(eventId ? { eventId } : {}),
    })
    const entry = await engine.dispatch(
      event,
      store.matching(eventType, merchantId, credentials.resellers),
      merchantId,
      createdAt,
    )
    if (entry.deliveries.length === 0) {
      logger?.(`! ${eventType} ${entry.eventId}: ${noDeliveryReason(credentials, eventType, merchantId)}`)
    }
    return entry
  }

  const advance: Sandbox['advance'] = async (ms) => {
    if (!isManualClock(clock)) throw new SandboxHttpError(409, 'the sandbox runs on a real clock; pass clock: "manual"')
    await engine.idle(false)
    try {
      await clock.advance(ms)
    } finally {
      hub.clockChanged()
    }
  }

  const core: SandboxCore = {
    credentials,
    store,
    engine,
    clock,
    emit,
    advance,
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
    clientToken: createTokenIssuer(clock, clientTokenTtlMs),
    guard,
    hub,
    noDeliveryReason: (eventType, merchantId) => noDeliveryReason(credentials, eventType, merchantId),
    hello: () => firstView(dashboard),
  }
  const handler = createSandboxHandler(core)

  const sandbox: Sandbox = {
    get url() {
      return url
    },
    clock,
    credentials,
    chaos,
    controlToken,
    get controlTokenRequired() {
      return guard.mode ?? guard.exposed
    },
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
      const { signatureSecret } = subscribeOptions
      if (
        signatureSecret !== undefined &&
        (typeof signatureSecret !== 'string' || !/^\S{16,}$/.test(signatureSecret))
      ) {
        throw new TypeError('subscribe: signatureSecret must be at least 16 characters, no whitespace')
      }
      // Same validation as the HTTP route, so code and HTTP subscriptions behave alike.
      return store.create(owner, parseSubscriptionBody(fields, false), signatureSecret)
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
      guard.exposed = !isLoopbackAddress(address.address)
      const tokenNeeded = sandbox.controlTokenRequired
      logger?.(
        `payhooks sandbox on ${url}: reseller key ${credentials.resellers.map((r) => r.key).join(', ')}; merchants ${credentials.merchants
          .map((m) => `${m.id} (${m.username}:${m.apiKey})`)
          .join(', ')}${chaos ? `; chaos seed ${chaos.seed}` : ''}; dashboard ${url}/${
          tokenNeeded ? `?token=${encodeURIComponent(controlToken)}; control token ${controlToken}` : ''
        }`,
      )
      return { url }
    },
    close() {
      closing ??= (async () => {
        const running = server
        hub.close()
        await engine.close()
        if (running) {
          await new Promise<void>((resolve) => {
            running.close(() => resolve())
            running.closeAllConnections()
          })
        }
        unlockState?.()
      })()
      return closing
    },
  }
  return sandbox
}
