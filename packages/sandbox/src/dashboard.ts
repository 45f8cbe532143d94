// What the dashboard is fed: its first view, the source of its live events, and why an emit
// reached no subscription.
import { samples } from '@payhooks/testing'
import { type Clock, isManualClock } from './clock.js'
import type { DeliveryEngine } from './delivery.js'
import type { LiveSource } from './events.js'
import type { SubscriptionStore } from './subscriptions.js'
import type {
  DashboardClock,
  DashboardEvents,
  DashboardSubscription,
  ResolvedChaos,
  SandboxCredentials,
  SandboxSubscription,
} from './types.js'

/** Events the first view carries; older ones stay readable through `/_sandbox/log`. */
const FIRST_VIEW_EVENTS = 200

export interface DashboardParts {
  engine: DeliveryEngine
  store: SubscriptionStore
  clock: Clock
  chaos: ResolvedChaos | undefined
  credentials: SandboxCredentials
}

/** A subscription as the dashboard shows it: no secret, and the owner by reseller id or merchant id. */
export function dashboardSubscription(subscription: SandboxSubscription): DashboardSubscription {
  return {
    id: subscription.id,
    url: subscription.url,
    event_types: [...subscription.event_types],
    is_active: subscription.is_active,
    owner:
      subscription.scope === 'reseller'
        ? `reseller ${subscription.resellerKey?.split('|')[0] ?? ''}`
        : `merchant ${subscription.merchantId}`,
  }
}

const clockView = (clock: Clock): DashboardClock => ({ now: clock.now(), manual: isManualClock(clock) })

export function liveSource({ engine, store, clock }: DashboardParts): LiveSource {
  return {
    entry: (eventId) => engine.entry(eventId),
    subscriptions: () => store.all().map(dashboardSubscription),
    clock: () => clockView(clock),
  }
}

/** The `hello` event: everything the page shows, as of now. */
export function firstView({ engine, store, clock, chaos, credentials }: DashboardParts): DashboardEvents['hello'] {
  const { entries, total } = engine.recent(FIRST_VIEW_EVENTS)
  return {
    clock: clockView(clock),
    chaos: chaos ? { seed: chaos.seed } : null,
    eventTypes: Object.keys(samples),
    merchantIds: [
      ...new Set([...credentials.resellers.flatMap((r) => r.merchantIds), ...credentials.merchants.map((m) => m.id)]),
    ],
    subscriptions: store.all().map(dashboardSubscription),
    log: entries,
    total,
  }
}

/** Why an emit reached no subscription, for the answer of `/_sandbox/emit` and the log line. */
export function noDeliveryReason(credentials: SandboxCredentials, eventType: string, merchantId: number): string {
  const known =
    credentials.merchants.some((m) => m.id === merchantId) ||
    credentials.resellers.some((r) => r.merchantIds.includes(merchantId))
  return known
    ? `no active subscription gets ${eventType} events of merchant ${merchantId}: the event is logged but was sent nowhere`
    : `merchant ${merchantId} is no merchant of the sandbox's accounts, so no subscription gets its events: the event is logged but was sent nowhere`
}
