import { parseCreatedAt } from '../time/parse.js'
import type { VerifiedEvent } from '../types.js'
import { compareMarks, markOf } from './marks.js'
import type { Ordering, OrderingMark, OrderingPosition, OrderingRule } from './types.js'

/** The ordering rules by event type, as the receiver keeps them. */
export type OrderingTable = ReadonlyMap<string, OrderingRule<never>>

/** The rules of the `ordering` option, checked; undefined when none is declared. */
export function orderingTable(rules: object | undefined): OrderingTable | undefined {
  if (rules === undefined) return undefined
  const table = new Map<string, OrderingRule<never>>()
  for (const [type, rule] of Object.entries(rules) as [string, OrderingRule<never> | undefined][]) {
    if (rule === undefined) continue
    if (typeof rule?.key !== 'function' || typeof rule.at !== 'function') {
      throw new TypeError(`createWebhooks: ordering.${type} must have key(event) and at(event) functions`)
    }
    table.set(type, rule)
  }
  return table.size > 0 ? table : undefined
}

function toMs(at: unknown): number {
  if (typeof at === 'number') return at
  if (typeof at === 'string') return parseCreatedAt(at)
  if (at instanceof Date) return at.getTime()
  return Number.NaN
}

/**
 * The event's ordering key and time from its type's rule; undefined for a type without one. Throws when the rule
 * gives no usable key or time (the event then fails and is retried, never handled unfenced).
 */
export function positionOf(table: OrderingTable | undefined, event: VerifiedEvent): OrderingPosition | undefined {
  const rule = table?.get(event.event_type) as OrderingRule<VerifiedEvent> | undefined
  if (rule === undefined) return undefined
  const key = rule.key(event)
  if (typeof key !== 'string' || key.length === 0) {
    throw new TypeError(`ordering.${event.event_type}.key gave no ordering key (a non-empty string) for this event`)
  }
  const at = toMs(rule.at(event))
  if (!Number.isFinite(at)) {
    throw new TypeError(`ordering.${event.event_type}.at gave no time (ms, Date or ISO 8601 string) for this event`)
  }
  return { key, at, eventType: event.event_type }
}

/** `context.ordering` for the event at `position`, given the key's mark and the fencing token of its claim. */
export function orderingOf(
  position: OrderingPosition,
  eventId: string,
  claim: { newest?: OrderingMark; fencingToken?: number },
): Ordering {
  const { newest } = claim
  const superseded = newest !== undefined && compareMarks(newest, markOf(position, eventId)) > 0
  return { key: position.key, at: position.at, superseded, newest, token: claim.fencingToken ?? 0 }
}
