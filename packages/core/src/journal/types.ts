import type { HealthCheck } from '../health/types.js'

/**
 * One answer to a signed delivery, as the receiver writes it to a {@link Journal}: never the body, never a secret.
 * Times are milliseconds since the epoch.
 */
export interface JournalRecord {
  /** Unique in the fleet (the writing process's random id and a counter): the tie-breaker of keyset paging. */
  readonly id: string
  /** When the answer went out. */
  readonly at: number
  readonly eventId: string
  readonly eventType: string
  /** The event's signed `created_at` as sent, or null (`transaction_returned` has none). */
  readonly createdAt: string | null
  /** The HTTP status answered. */
  readonly status: number
  /** `processed`, `duplicate`, `queued`, `parked`, `in_progress`, or the failure's code (`handler_failed`...). */
  readonly outcome: string
  /** The instance that answered (`createWebhooks({ instance })`). */
  readonly instance: string
  /** From the request's first byte to the answer. */
  readonly durationMs: number
  /** Position of the secret that verified it in the `secret` list. */
  readonly secretIndex: number
  /** That secret's label, when given as `{ secret, label }`. */
  readonly secretLabel?: string
}

/** What {@link Journal.list} is asked: records newest first, after the cursor's position, filtered. */
export interface JournalListQuery {
  readonly eventType?: string
  readonly outcome?: string
  /** Records at or after this time (ms). */
  readonly from?: number
  /** Records before this time (ms). */
  readonly to?: number
  /** The last record of the previous page: only records strictly older in `(at, id)` order. */
  readonly after?: { readonly at: number; readonly id: string }
  readonly limit: number
}

/** Answers counted in one minute by outcome, every instance together. */
export interface JournalMinute {
  /** The minute's start (ms). */
  readonly minute: number
  readonly outcome: string
  readonly count: number
}

/**
 * Where a receiver fleet keeps its answers to signed deliveries, so any instance (a board-only process too) can say
 * what became of an event: `memoryJournal()` here, `redisJournal` in `@payhooks/redis`, `postgresJournal` in
 * `@payhooks/postgres`. Check one of your own with `journalContract` of `@payhooks/testing/journal-contract`.
 *
 * The receiver never waits for it: answers are buffered and written in batches off the hot path (every 250 ms,
 * or at 256 records). A record is an account, not the source of truth: one still buffered when the process dies
 * is lost, and a failed write is logged and dropped, never retried into the delivery's answer.
 */
export interface Journal {
  /** How long records are kept: at least 72 hours, the service's retries. */
  readonly retentionMs: number
  /** Writes `records` (one batch, in answer order); may reject, and the batch is then dropped. */
  write(records: readonly JournalRecord[]): Promise<void>
  /** The records of `eventId`, oldest first (by `at`, then `id`); `[]` for an unknown one. */
  answers(eventId: string): Promise<JournalRecord[]>
  /** Records matching `query`, newest first by `(at, id)`, at most `query.limit`. */
  list(query: JournalListQuery): Promise<JournalRecord[]>
  /** Answers per minute and outcome for minutes starting in `[from, to)`, every instance together. */
  counts(from: number, to: number): Promise<JournalMinute[]>
  /** Prepares the backing (a table, scripts); called once before the first use. */
  init?(): Promise<void>
  /** Called by `webhooks.close()` after the last batch is written. */
  shutdown?(): Promise<void>
  /** Reachability and setup checks for `webhooks.health()`. */
  health?(): Promise<HealthCheck[]>
}

/** Which secret verified an answered delivery. */
export interface JournalSecret {
  readonly index: number
  readonly label?: string
}

/** One answer in an event's timeline or in {@link Events.list}. */
export interface JournalAnswer {
  readonly at: Date
  readonly status: number
  readonly outcome: string
  readonly instance: string
  readonly durationMs: number
  readonly verifiedWith: JournalSecret
}

/** An answer in a list, with the event it answered. */
export interface JournalListedAnswer extends JournalAnswer {
  readonly eventId: string
  readonly eventType: string
  readonly createdAt: string | null
}

/** What {@link Events.get} resolves: the event and every answer it got, oldest first. */
export interface EventTimeline {
  readonly eventId: string
  readonly eventType: string
  readonly createdAt: string | null
  /** The first answer that ran its handlers to success (`processed`) or queued it, or null while none did. */
  readonly handledAt: Date | null
  readonly answers: readonly JournalAnswer[]
}

/** Options of {@link Events.list}. */
export interface EventListQuery {
  eventType?: string
  /** An answer's outcome: `handler_failed`, `processed`, `duplicate`... */
  outcome?: string
  /** Answers at or after this time. */
  from?: Date
  /** Answers before this time. */
  to?: Date
  /**
   * At most this many, 1 to 1000.
   * @default 50
   */
  limit?: number
  /** The `cursor` of the previous page. */
  cursor?: string
}

/** A page of {@link Events.list}. */
export interface EventListPage {
  readonly answers: readonly JournalListedAnswer[]
  /** Pass it as `cursor` for the next page; absent on the last one. */
  readonly cursor?: string
  /**
   * Set on a page filtered by `eventType` that stopped searching before it was full (a type matching few answers, or
   * none): answers before this time are not searched yet, and `cursor` searches on from it.
   */
  readonly searchedFrom?: Date
}

/** Answers per minute by outcome, every instance sharing the journal together. */
export interface FleetCounts {
  /** The start of the first minute. */
  readonly from: Date
  /** One entry per minute, oldest first, the last the minute under way: answers by outcome. */
  readonly perMinute: readonly Readonly<Record<string, number>>[]
  /** The same, summed. */
  readonly total: Readonly<Record<string, number>>
}

/**
 * The journal as `webhooks.events` reads it. Every method rejects with a `TypeError` when the receiver has no
 * `journal`. Reads first write this instance's buffered answers, so it sees its own.
 */
export interface Events {
  /**
   * Everything the fleet answered for `eventId`, oldest first, or undefined for an id never answered (or past
   * retention).
   *
   * @example
   * const timeline = await webhooks.events.get('evt_123')
   * for (const answer of timeline?.answers ?? []) console.log(answer.at, answer.status, answer.outcome, answer.instance)
   */
  get(eventId: string): Promise<EventTimeline | undefined>
  /**
   * Answers newest first, filtered, a page at a time (keyset: stable while new answers arrive). No journal indexes
   * event types: a list by `eventType` searches an hour at a time for about half a second at most, then answers what
   * it found, maybe nothing, with a `cursor` and `searchedFrom` when it stopped short, so a type that matches nothing
   * never walks the whole retention in one call.
   *
   * @example
   * const { answers, cursor } = await webhooks.events.list({ outcome: 'handler_failed', from: new Date(Date.now() - 3_600_000) })
   */
  list(query?: EventListQuery): Promise<EventListPage>
  /**
   * Answers per minute by outcome over the last `minutes` (default 60, at most 1440), every instance together.
   *
   * @example
   * const { total } = await webhooks.events.counts()
   * console.log(total.processed ?? 0, total.handler_failed ?? 0)
   */
  counts(options?: { minutes?: number }): Promise<FleetCounts>
  /** Writes this instance's buffered answers now (`close()` does too). */
  flush(): Promise<void>
  /** Whether the receiver has a journal. */
  readonly enabled: boolean
  /** How long the journal keeps an answer (its `retentionMs`), or undefined without a journal. */
  readonly retentionMs: number | undefined
}
