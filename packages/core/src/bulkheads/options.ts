import { check, inRange, positiveInteger } from '../validations.js'

/**
 * Bulkheads between event types (`createWebhooks({ bulkheads })`): how many of the `maxConcurrentEvents` slots one
 * type may hold, and when a type whose runs overrun `deadlineMs` is quarantined. See "Bulkheads" in
 * docs/guide/production.md.
 *
 * @example
 * // 8 slots: any one type holds at most 4 (the default share), transaction_settled up to 6.
 * const webhooks = createWebhooks({
 *   secret,
 *   store: postgresStore(pool),
 *   maxConcurrentEvents: 8,
 *   bulkheads: { share: 0.5, perType: { transaction_settled: 6 } },
 * })
 */
export interface BulkheadOptions {
  /**
   * The part of `maxConcurrentEvents` one event type may hold at once, a fraction above 0 and at most 1: the type's
   * slots are `max(1, floor(maxConcurrentEvents × share))`. A delivery of a type holding its slots waits, claiming
   * nothing, for one of them (not for the others' slots) and is answered 503 `busy` once it could no longer finish
   * before its deadline, as a delivery waiting for any slot is. `1` lets one type take every slot.
   * @default 0.5 (4 of 8 slots; 1 of 1)
   */
  share?: number
  /**
   * Slots of the named event types, in place of what `share` gives them: whole numbers from 1 to
   * `maxConcurrentEvents`.
   * @example
   * bulkheads: { perType: { transaction_settled: 6, transaction_returned: 2 } }
   * @default none: every type gets `share`'s
   */
  perType?: Readonly<Record<string, number>>
  /**
   * How many of one type's runs may be overrunning (their handlers still running `deadlineMs` after the claim) before
   * the type is quarantined: its deliveries are then answered 503 `quarantined` at once, nothing claimed or run, until
   * one of those runs settles (ends, fails, or stops on its signal). A positive whole number, or `Infinity` for never.
   * @default the type's slots (its share full of overrunning runs); `Infinity` (never) for a type allowed every slot
   * (`share: 1`, or `maxConcurrentEvents: 1`) or while `maxConcurrentEvents` is unbounded
   */
  quarantineAfter?: number
}

/** `createWebhooks`' `bulkheads` option checked: each type's slots and quarantine threshold. */
export interface CheckedBulkheads {
  /** The slots `type` may hold; `Infinity` when `maxConcurrentEvents` is unbounded. */
  slotsOf(type: string): number
  /** How many overrunning runs quarantine a type holding `slots`; `Infinity` for never. */
  quarantineAfterOf(slots: number): number
}

const where = 'createWebhooks'

/**
 * Checks `bulkheads` against `maxConcurrentEvents` (`Infinity` when unbounded): undefined when bulkheads are off
 * (`false`), or when nothing could apply (every type allowed every slot, or unbounded slots, and no
 * `quarantineAfter`), so the hot path skips them.
 */
export function checkBulkheads(
  option: BulkheadOptions | false | undefined,
  maxConcurrentEvents: number,
): CheckedBulkheads | undefined {
  if (option === false) return undefined
  check(
    option === undefined || (typeof option === 'object' && option !== null),
    where,
    'bulkheads',
    'be an object or false',
    TypeError,
  )
  const given = option ?? {}
  const share = inRange(given.share ?? 0.5, where, 'bulkheads.share', { above: 0, max: 1 })
  const perType = new Map<string, number>()
  for (const [type, slots] of Object.entries(given.perType ?? {})) {
    positiveInteger(slots, where, `bulkheads.perType.${type}`)
    if (maxConcurrentEvents !== Number.POSITIVE_INFINITY) {
      check(slots <= maxConcurrentEvents, where, `bulkheads.perType.${type}`, 'be at most maxConcurrentEvents')
    }
    perType.set(type, slots)
  }
  const quarantineAfter = given.quarantineAfter
  if (quarantineAfter !== undefined && quarantineAfter !== Number.POSITIVE_INFINITY) {
    positiveInteger(quarantineAfter, where, 'bulkheads.quarantineAfter')
  }
  const bounded = maxConcurrentEvents !== Number.POSITIVE_INFINITY
  const shared = bounded ? Math.max(1, Math.floor(maxConcurrentEvents * share)) : Number.POSITIVE_INFINITY
  const shares = shared < maxConcurrentEvents || [...perType.values()].some((slots) => slots < maxConcurrentEvents)
  if (!shares && (quarantineAfter === undefined || quarantineAfter === Number.POSITIVE_INFINITY)) return undefined
  return {
    slotsOf: (type) => (bounded ? (perType.get(type) ?? shared) : Number.POSITIVE_INFINITY),
    // A type allowed every slot has no bulkhead to keep: it is quarantined only when told how.
    quarantineAfterOf: (slots) => quarantineAfter ?? (slots < maxConcurrentEvents ? slots : Number.POSITIVE_INFINITY),
  }
}
