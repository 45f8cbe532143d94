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
  /** The HTTP status answered; 0 on an account of the receiver's own that answered no request (see `outcome`). */
  readonly status: number
  /**
   * `processed`, `duplicate`, `queued`, `parked`, `in_progress`, or the failure's code (`handler_failed`...); or an
   * account the receiver adds (status 0): `<outcome>_late` when the work of a delivery answered at the deadline
   * settled after it (`processed_late`: its handlers succeeded then), `replay_<status>` for a dead letter replayed
   * (`replay_processed`, `replay_duplicate`, `replay_in_progress`, `replay_failed`), `journal_dropped` for answers of
   * this event the receiver could not keep (`copies` of them) and `journal_gap` (event id and type `''`) for the
   * answers of every event it could not keep in a minute (`copies` of them, from `at` to `at + durationMs`).
   */
  readonly outcome: string
  /** The instance that answered (`createWebhooks({ instance })`). */
  readonly instance: string
  /** From the request's first byte to the answer. */
  readonly durationMs: number
  /** Position of the secret that verified it in the `secret` list. */
  readonly secretIndex: number
  /** That secret's label, when given as `{ secret, label }`. */
  readonly secretLabel?: string
  /**
   * How many answers alike this record stands for, when more than its own: past the first few copies of an event in a
   * minute (answered `duplicate`, `in_progress`, `busy`, or refused alike), an instance counts the rest, one record
   * per event, outcome and minute, the first of them with their number; and the answers a `journal_dropped` or
   * `journal_gap` record says are missing. Absent: 1.
   */
  readonly copies?: number
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

/** Answers counted in one minute by outcome (a record's `copies` included), every instance together. */
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
 * is lost. A failed write (rejected, or unsettled after 10 s) is tried again, with backoff, as long as the process
 * lives and its buffer has room, never into a delivery's answer: so a journal must take a batch again without
 * keeping any record twice (a record is known by its `id`).
 */
export interface Journal {
  /** How long records are kept: at least 72 hours, the service's retries. */
  readonly retentionMs: number
  /**
   * Writes `records` (one batch, in answer order); may reject, and the batch is then written again later. A record
   * whose `id` it holds already is not kept again (the reply of an earlier write of it may have been lost).
   */
  write(records: readonly JournalRecord[]): Promise<void>
  /** The records of `eventId`, oldest first (by `at`, then `id`); `[]` for an unknown one. */
  answers(eventId: string): Promise<JournalRecord[]>
  /** Records matching `query`, newest first by `(at, id)`, at most `query.limit`. */
  list(query: JournalListQuery): Promise<JournalRecord[]>
  /** Answers per minute and outcome for minutes starting in `[from, to)`, every instance together. */
  counts(from: number, to: number): Promise<JournalMinute[]>
  /** Prepares the backing (a table, scripts); called before the first use, and again after it rejected. */
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
  /** How many answers alike it stands for (the record's `copies`): 1 for one answer. */
  readonly copies: number
}

/** A span in which an instance could not keep answers in the journal (its `journal_gap` records). */
export interface JournalGap {
  /** The first answer dropped. */
  readonly from: Date
  /** The last one. */
  readonly to: Date
  /** The instance that dropped them. */
  readonly instance: string
  /** How many answers, of any event, were dropped then. */
  readonly dropped: number
}

/** An answer in a list, with the event it answered. */
export interface JournalListedAnswer extends JournalAnswer {
  readonly eventId: string
  readonly eventType: string
  readonly createdAt: string | null
  /** `createdAt` as a `Date` (as `deadLetters.get` gives it), or null when there is none or it is not a time. */
  readonly createdAtDate: Date | null
}

/** What {@link Events.get} resolves: the event and every answer it got, oldest first. */
export interface EventTimeline {
  readonly eventId: string
  readonly eventType: string
  /** The event's signed `created_at` exactly as sent (a string, as in `stats().retrying`), or null. */
  readonly createdAt: string | null
  /** `createdAt` as a `Date` (as `deadLetters.get` gives it), or null when there is none or it is not a time. */
  readonly createdAtDate: Date | null
  /**
   * The first account of its handlers run to success (`processed`, `processed_late`, `replay_processed`) or of the
   * event queued, or null while none is recorded.
   */
  readonly handledAt: Date | null
  readonly answers: readonly JournalAnswer[]
  /**
   * Spans, from its `created_at` (or first answer) on, in which an instance could not keep answers of any event
   * (its journal unreachable long enough to fill its buffer): answers of this event may be missing from them.
   */
  readonly gaps: readonly JournalGap[]
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
   * retention). Waits at most 3 s for this instance's buffered answers, and rejects when the journal does not
   * answer within 10 s.
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
   * Answers per minute by outcome over the last `minutes` (default 60, at most 1440), every instance together,
   * with the receivers' own accounts (`processed_late`, `replay_processed`, `journal_gap`...).
   *
   * @example
   * const { total } = await webhooks.events.counts()
   * console.log(total.processed ?? 0, total.handler_failed ?? 0)
   */
  counts(options?: { minutes?: number }): Promise<FleetCounts>
  /**
   * Writes this instance's buffered answers now (`close()` does too), waiting at most 3 s; never rejects (answers
   * it could not write stay buffered and are tried again).
   */
  flush(): Promise<void>
  /** Whether the receiver has a journal. */
  readonly enabled: boolean
  /** How long the journal keeps an answer (its `retentionMs`), or undefined without a journal. */
  readonly retentionMs: number | undefined
}
