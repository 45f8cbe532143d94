// The receiver's own figures: its stats() (deliveries, latency, in flight, conflicts, retried events, secrets:
// this process only) and the ordering keys held (in the store: every instance sees the same). Each is read only
// when the receiver has it (an older @payhooks/core, or a store that cannot list held keys, shows a note instead).
import type { ReceiverStats } from '@payhooks/core'
import type { BoardWebhooks, HeldKeyLike } from './types.js'

type Instance = BoardWebhooks & {
  stats?: () => ReceiverStats
  heldKeys?: (options?: { limit?: number }) => Promise<readonly HeldKeyLike[] | undefined>
}

const hasStats = (webhooks: Instance): webhooks is Instance & { stats: () => ReceiverStats } =>
  typeof webhooks.stats === 'function'

/** The overview's part of stats(): the hour's totals, deliveries per minute, latency, gauges, oldest retried. */
export function instanceSummary(webhooks: Instance) {
  if (!hasStats(webhooks)) return null
  const stats = webhooks.stats()
  const { deliveries, latency, retrying } = stats
  return {
    since: stats.since.toISOString(),
    at: stats.at.toISOString(),
    outcomes: deliveries.total,
    perMinute: deliveries.perMinute.map((counts) => Object.values(counts).reduce((sum, n) => sum + n, 0)),
    latency,
    inFlight: stats.inFlight,
    waiting: stats.waiting,
    // An older @payhooks/core has no hung figure.
    hung: stats.hung
      ? {
          count: stats.hung.count,
          oldest: stats.hung.oldest && {
            eventId: stats.hung.oldest.eventId,
            eventType: stats.hung.oldest.eventType,
            since: stats.hung.oldest.since.toISOString(),
          },
        }
      : null,
    // Nor, older still, the bulkheads' figures.
    overrunning: stats.overrunning
      ? {
          count: stats.overrunning.count,
          oldest: stats.overrunning.oldest && {
            eventId: stats.overrunning.oldest.eventId,
            eventType: stats.overrunning.oldest.eventType,
            since: stats.overrunning.oldest.since.toISOString(),
          },
        }
      : null,
    quarantined: stats.quarantined
      ? stats.quarantined.map((type) => ({
          eventType: type.eventType,
          since: type.since.toISOString(),
          overrunning: type.overrunning,
          slots: type.slots,
        }))
      : null,
    conflicts: stats.conflicts,
    retrying: {
      count: retrying.count,
      oldest: retrying.oldest && {
        eventId: retrying.oldest.eventId,
        eventType: retrying.oldest.eventType,
        createdAt: retrying.oldest.createdAt,
        firstSeen: retrying.oldest.firstSeen.toISOString(),
        lastSeen: retrying.oldest.lastSeen.toISOString(),
        attempts: retrying.oldest.attempts,
        lastOutcome: retrying.oldest.lastOutcome,
        lastStatus: retrying.oldest.lastStatus,
      },
    },
  }
}

/** The whole of stats(), for `GET /api/stats`; null when the receiver has none. */
export function instanceStats(webhooks: Instance): ReceiverStats | null {
  return hasStats(webhooks) ? webhooks.stats() : null
}

/** Verifications per secret per hour (72 hours), counted in this process since it started. */
export function secretUsage(webhooks: Instance) {
  if (!hasStats(webhooks)) return { supported: false as const }
  const stats = webhooks.stats()
  return {
    supported: true as const,
    since: stats.since.toISOString(),
    at: stats.at.toISOString(),
    from: stats.secrets.from.toISOString(),
    secrets: stats.secrets.usage.map((usage) => ({
      index: usage.index,
      label: usage.label ?? null,
      total: usage.total,
      perHour: usage.perHour,
      lastUsedAt: usage.lastUsedAt.toISOString(),
    })),
  }
}

/** Most held keys listed. */
const MAX_KEYS = 500

/** The ordering keys held now, by which event, since when and until when; `supported: false` when not listed. */
export async function heldKeys(webhooks: Instance, limit = 200) {
  if (typeof webhooks.heldKeys !== 'function') return { supported: false as const, keys: [] }
  const keys = await webhooks.heldKeys({ limit: Math.min(limit, MAX_KEYS) })
  if (keys === undefined) return { supported: false as const, keys: [] }
  return {
    supported: true as const,
    at: new Date().toISOString(),
    // The fencing token is left out: it lets a holder write, and the page has no use for it.
    keys: keys.map((held) => ({
      key: held.key,
      eventId: held.eventId,
      eventType: held.eventType,
      since: held.since.toISOString(),
      expiresAt: held.expiresAt.toISOString(),
    })),
  }
}
