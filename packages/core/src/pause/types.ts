import type { ReplayReport } from '../dead-letters/types.js'
import type { HealthCheck } from '../health/types.js'

type MaybePromise<T> = T | Promise<T>

/** One pause in force: an event type (or every type, `'*'`) whose deliveries run no handler until resumed. */
export interface Pause {
  /** The event type paused, or `'*'` for every type. */
  eventType: string
  /** Why, in the operator's words: one line, shown on the board, the CLI, `health()` and `stats()`. */
  reason: string
  /** When it was paused. */
  since: Date
  /** The instance that paused it (`createWebhooks({ instance })`), when known. */
  by?: string
}

/**
 * Where the pauses of a receiver fleet are kept (`createWebhooks({ pauses })`), so that a pause made on one instance
 * stops every instance sharing the store. A receiver reads `list()` when it starts (its first deliveries wait for
 * that one read) and then in the background every `refreshMs`, keeping what it read in memory: the hot path reads
 * only that copy, never the store. A store that can tell its listeners at once (`watch`) is read on each change
 * instead. Implementations: `memoryPauseStore()` here (one process), `redisPauseStore` in `@payhooks/redis`
 * (standalone, Sentinel or Cluster), `postgresPauseStore` in `@payhooks/postgres`.
 *
 * @example
 * const webhooks = createWebhooks({ secret, store: redisStore(redis), pauses: redisPauseStore(redis) })
 * await webhooks.pause('transaction_settled', { reason: 'ledger migration' })
 */
export interface PauseStore {
  /**
   * How often a receiver reads `list()` again, in milliseconds: a pause reaches every instance within about this
   * (plus one read's time).
   * @default 1000
   */
  readonly refreshMs?: number
  /** Optional set-up, called once before the first other call (again after a failure). */
  init?(): MaybePromise<void>
  /** Keeps `pause`, replacing any pause of the same `eventType`. */
  pause(pause: Pause): MaybePromise<void>
  /** Lifts the pause of `eventType` (`'*'`: the pause of every type, not each type's own); whether there was one. */
  resume(eventType: string): MaybePromise<boolean>
  /** Every pause in force. */
  list(): MaybePromise<Pause[]>
  /**
   * Optional, for a store that knows every change at once (the memory store): `listener` is called after each
   * change, and the receiver reads `list()` then instead of every `refreshMs`. Returns the unsubscribe.
   */
  watch?(listener: () => void): () => void
  /** Optional: checks the backend answers and its table exists, for `webhooks.health()`. */
  health?(signal: AbortSignal): Promise<HealthCheck[]>
}

/** Options of {@link Webhooks.pause}. */
export interface PauseOptions {
  /**
   * Why: one line for the other operators, shown wherever the pause is (no secret or customer data).
   * @default ''
   */
  reason?: string
}

/** Options of {@link Webhooks.resume}. */
export interface ResumeOptions {
  /**
   * Whether to replay the letters parked `paused` while the type was paused (with a `deadLetters` store), once every
   * instance has seen the resume (twice the store's `refreshMs`): through `deadLetters.replayAll`, a few at a time,
   * each once, giving way to live deliveries waiting for a slot. `false` leaves them for
   * `deadLetters.replayAll({ code: 'paused' })`.
   * @default true
   */
  replay?: boolean
}

/** What {@link Webhooks.resume} did. */
export interface ResumeResult {
  /** Whether there was a pause of that type to lift. */
  resumed: boolean
  /**
   * The replay of the letters parked while paused, when one ran: tried, processed, duplicate, failed, gone (see
   * `ReplayReport`). Letters of a type still paused otherwise (`'*'` resumed, the type's own pause kept) stay
   * parked, counted failed.
   */
  replay?: ReplayReport
}

/** `webhooks.pause`, `resume` and `paused`: see {@link PauseStore} and docs/guide/operating.md. */
export interface PauseControls {
  /**
   * Pauses an event type (or every type, `'*'`) across every receiver sharing the `pauses` store, within about a
   * second: its deliveries are verified, then parked as `paused` letters with a durable `deadLetters` store
   * (answered 200 `parked`) or answered 503 `paused` (the service retries them, for 72 hours from each event's
   * creation: a warning is logged 24 hours before a pause reaches that). Handlers already running finish. Pausing a
   * type paused already replaces its reason. Resolves once the store holds the pause and this instance honours it;
   * rejects with a `StoreError` when the store does not answer.
   *
   * @example
   * await webhooks.pause('transaction_settled', { reason: 'ledger migration until 02:00' })
   */
  pause(eventType: string, options?: PauseOptions): Promise<Pause>
  /**
   * Lifts the pause of `eventType` (`'*'` lifts the pause of every type, not a type's own), then, with a
   * `deadLetters` store, replays the letters parked `paused` of that type once every instance has seen the resume:
   * each once, a few at a time, giving way to live deliveries (see {@link ResumeOptions}). Resolves when the replay
   * ended, with its report.
   *
   * @example
   * const { replay } = await webhooks.resume('transaction_settled')
   * console.log(`${replay?.processed ?? 0} replayed, ${replay?.failed ?? 0} still parked`)
   */
  resume(eventType: string, options?: ResumeOptions): Promise<ResumeResult>
  /**
   * The pauses in force, read from the `pauses` store, oldest first.
   *
   * @example
   * for (const pause of await webhooks.paused()) console.log(pause.eventType, pause.since, pause.reason)
   */
  paused(): Promise<Pause[]>
}
