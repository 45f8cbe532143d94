/**
 * Where an ordered event stands: its ordering key and the time it is ordered by. The receiver passes it to
 * {@link WebhookStore.claim} for an event type with an `ordering` rule.
 */
export interface OrderingPosition {
  /** The ordering key, e.g. the transaction id. */
  readonly key: string
  /** Milliseconds since the epoch. */
  readonly at: number
  readonly eventType: string
}

/** The newest event applied for an ordering key: the key's high-water mark. */
export interface OrderingMark {
  /** Milliseconds since the epoch, as the event's rule gave it. */
  readonly at: number
  readonly eventType: string
  readonly eventId: string
}

/** `context.ordering`: how the event stands against the newest one already applied for its key. */
export interface Ordering {
  /** The event's ordering key. */
  readonly key: string
  /** The event's own time, in milliseconds since the epoch. */
  readonly at: number
  /**
   * True when an event newer than this one (later `at`; on a tie, the greater `event_type`, then `event_id`) was
   * already handled for the same key: this one arrived late, and setting a status from it would undo the newer one.
   */
  readonly superseded: boolean
  /** The newest event handled for the key before this one, if any (superseded or not). */
  readonly newest: OrderingMark | undefined
  /**
   * The fencing token of this claim on the key: a whole number greater than that of every earlier claim of the same
   * key, in every process sharing the store (safe as a JavaScript number until the year 2255). A holder may lose the
   * key (frozen past its lease) while a later claim handles a newer event: give the token with every write to a
   * system outside the store's transaction, and have that system refuse a write whose token is lower than the last
   * one it took for the key. 0 only from a custom store that keeps no tokens (`storeContract` requires them).
   *
   * @example
   * // In the ledger: UPDATE ... SET status = $2, fence = $3 WHERE id = $1 AND fence < $3
   * await ledger.setStatus(event.data.transaction_id, 'settled', { fence: context.ordering!.token })
   */
  readonly token: number
}

/**
 * How the events of one type are ordered: `key` names the thing they change (a transaction), `at` the time they
 * are ordered by: milliseconds since the epoch, a `Date`, or an ISO 8601 string (read as `created_at` is: no zone
 * means UTC). A key that is not a non-empty string, or a time that does not parse, fails the event (500, retried).
 *
 * @example
 * const rule: OrderingRule<TransactionSettledEvent> = {
 *   key: (event) => event.data.transaction_id,
 *   at: (event) => event.data.settlement_date,
 * }
 */
export interface OrderingRule<Event> {
  key(event: Event): string
  at(event: Event): number | string | Date
}

/** The `ordering` option of `createWebhooks`: a rule per event type, typed from the receiver's schemas. */
export type OrderingRules<E> = { readonly [T in keyof E]?: OrderingRule<E[T]> }

/** The third argument of `webhooks.on`. */
export interface OnOptions {
  /**
   * Skip this handler when the event is superseded (`context.ordering.superseded`): a newer event of the same
   * ordering key was handled already. A skipped handler counts as succeeded, so the event is acknowledged and
   * marked done. Only meaningful for event types with an `ordering` rule.
   * @default false
   */
  skipSuperseded?: boolean
}

/**
 * An ordering key held right now by the claim of one event (from {@link WebhookStore.heldKeys}): the key's other
 * events wait (409 `key_held`) until it is released, completed or its lease runs out.
 */
export interface HeldOrderingKey {
  /** The ordering key. */
  readonly key: string
  /** The event whose claim holds the key. */
  readonly eventId: string
  readonly eventType: string
  /** When this claim took the key. */
  readonly since: Date
  /** When the claim's lease ends, unless renewed (the receiver renews it while the handlers run). */
  readonly expiresAt: Date
  /** The claim's fencing token (`context.ordering.token`). */
  readonly token: number
}

/** Options of {@link Webhooks.heldKeys}. */
export interface HeldKeysOptions {
  /**
   * Most keys listed, at most 1000.
   * @default 100
   */
  limit?: number
  /**
   * Longest the call waits for the store: past it, it rejects with a `StoreError` (`held keys`).
   * @default 2000
   */
  timeoutMs?: number
}
