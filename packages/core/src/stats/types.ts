import type { Pause } from '../pause/types.js'

/**
 * What `webhooks.stats()` returns: this process's deliveries, counted in memory since the receiver was made.
 * Other instances count their own; for every instance at once, use the OpenTelemetry metrics of `@payhooks/otel`
 * (`payhooks.deliveries`, `payhooks.answer.duration`, `payhooks.event.conflicts`, `payhooks.secret.verified`).
 */
export interface ReceiverStats {
  /** When this receiver was made: no count goes back further. */
  readonly since: Date
  /** When these figures were read. */
  readonly at: Date
  /** Deliveries answered in the last 60 minutes, by outcome. */
  readonly deliveries: DeliveryCounts
  /** How long answers took over the last 60 minutes, from the request's first byte (as the deadline counts it). */
  readonly latency: AnswerLatency
  /** Deliveries and dispatches running now (holding an event slot, or running without a limit), hung runs included. */
  readonly inFlight: number
  /** Runs whose handlers overran `maxRunMs` and still run, holding their event, key and slot (`hung_handlers`). */
  readonly hung: HungRuns
  /**
   * Runs whose handlers still run `deadlineMs` after their claim (answered 503 `deadline_exceeded` if a delivery),
   * hung ones included: the first sign of a handler that ignores its signal, long before `maxRunMs`
   * (`overrunning_handlers`).
   */
  readonly overrunning: OverrunningRuns
  /** Event types quarantined now (`bulkheads`): too many of their runs overrunning (`quarantined_types`). */
  readonly quarantined: readonly QuarantinedType[]
  /**
   * Event types paused by an operator (`webhooks.pause`, on any instance sharing the pause store), as this process
   * last read them (within the store's `refreshMs`): their deliveries are parked `paused` or answered 503 `paused`,
   * counted in {@link ReceiverStats.deliveries} as the outcome `paused`.
   */
  readonly paused: readonly Pause[]
  /** Deliveries and dispatches waiting for an event slot (`maxConcurrentEvents`) now. */
  readonly waiting: number
  /** Copies of an event received with other bytes (`EventConflictError`) in the last 60 minutes. */
  readonly conflicts: number
  /**
   * Requests refused 401 for their signature in the last 60 minutes: without one, or with one no secret matches.
   * Counted here and in {@link ReceiverStats.deliveries} (by code), never in {@link ReceiverStats.latency}.
   */
  readonly refused: RefusedRequests
  /** Events this process answered non-2XX (so the service retries them) and has not answered 2XX since. */
  readonly retrying: RetryingEvents
  /** Deliveries verified by each secret of the list, per hour over the last 72 hours. */
  readonly secrets: SecretStats
}

/** Requests refused for their signature, over the last 60 minutes. */
export interface RefusedRequests {
  /** `missingSignature + invalidSignature`. */
  readonly count: number
  /** Without the signature header (`missing_signature`): answered at once, the body unread. */
  readonly missingSignature: number
  /** With a signature no secret matches, or not shaped as one (`invalid_signature`). */
  readonly invalidSignature: number
}

/** Deliveries answered per minute, by outcome. */
export interface DeliveryCounts {
  /** The start of the first minute of {@link DeliveryCounts.perMinute}. */
  readonly from: Date
  /**
   * 60 entries, oldest first, the last the minute under way: answers by outcome, as telemetry names them
   * (`processed`, `duplicate`, `queued`, `parked`, `in_progress`, or the failure's code: `invalid_signature`...).
   */
  readonly perMinute: readonly Readonly<Record<string, number>>[]
  /** The same, summed over the 60 minutes. */
  readonly total: Readonly<Record<string, number>>
}

/**
 * Answer latency percentiles, read from a histogram of buckets about 19% wide (four per doubling): each figure
 * is the upper edge of the bucket it falls in, so the true value is at most that and over 84% of it.
 */
export interface AnswerLatency {
  /**
   * Answers measured: signed deliveries only. Requests refused for their signature ({@link ReceiverStats.refused})
   * and deliveries refused before any work (while closing, which have no first byte) are left out.
   */
  readonly count: number
  /** Milliseconds; null with no answer in the hour. */
  readonly p50Ms: number | null
  /** Milliseconds; null with no answer in the hour. */
  readonly p99Ms: number | null
}

/** Runs of this process whose handlers overran `maxRunMs` (their signal aborted) and have not settled. */
export interface HungRuns {
  /** How many there are now. */
  readonly count: number
  /** The longest hung: its event, and since when it counts as hung (`maxRunMs` after its claim); null with none. */
  readonly oldest: HungRun | null
}

/** A run hung past `maxRunMs`. */
export interface HungRun {
  readonly eventId: string
  readonly eventType: string
  /** When it overran `maxRunMs`. */
  readonly since: Date
}

/** Runs of this process whose handlers still run `deadlineMs` after their claim. */
export interface OverrunningRuns {
  /** How many there are now. */
  readonly count: number
  /** The one overrunning longest: its event, and since when it overruns (`deadlineMs` after its claim); or null. */
  readonly oldest: OverrunningRun | null
}

/** A run overrunning `deadlineMs`. */
export interface OverrunningRun {
  readonly eventId: string
  readonly eventType: string
  /** When it overran `deadlineMs`. */
  readonly since: Date
}

/** An event type quarantined by the receiver's `bulkheads`: its deliveries are answered 503 `quarantined`. */
export interface QuarantinedType {
  readonly eventType: string
  /** When it was quarantined. */
  readonly since: Date
  /** Its runs overrunning `deadlineMs` now: the quarantine lifts once fewer than `quarantineAfter` are. */
  readonly overrunning: number
  /** The slots it may hold (its share), or null when `maxConcurrentEvents` is unbounded. */
  readonly slots: number | null
}

/** The events the service is retrying, as far as this process saw. */
export interface RetryingEvents {
  /**
   * How many there are: the true count (up to 1,000,000), though only the last 1,000 first seen are kept in
   * detail for {@link RetryingEvents.oldest}.
   */
  readonly count: number
  /** The one with the oldest `created_at` (the first to run out of the service's 72 hours), or null. */
  readonly oldest: RetryingEvent | null
}

/** An event this process answered non-2XX and not 2XX since. */
export interface RetryingEvent {
  readonly eventId: string
  readonly eventType: string
  /** Its signed `created_at` as sent (`settlement_date` for a `transaction_returned` without one), or null. */
  readonly createdAt: string | null
  /** When this process first answered it non-2XX. */
  readonly firstSeen: Date
  /** When it last answered it. */
  readonly lastSeen: Date
  /** Deliveries of it this process answered non-2XX. */
  readonly attempts: number
  /** The last answer's outcome (`handler_failed`, `deadline_exceeded`...) and status. */
  readonly lastOutcome: string
  readonly lastStatus: number
}

/** Verifications per secret, for a rotation: retire the old secret once it stays at zero. */
export interface SecretStats {
  /** The start of the first hour of each {@link SecretUsage.perHour}. */
  readonly from: Date
  /** One entry per secret that verified a delivery since {@link ReceiverStats.since}, by index. */
  readonly usage: readonly SecretUsage[]
}

/** One secret's verifications. Never the secret itself. */
export interface SecretUsage {
  /** Its position in the `secret` list (or the resolver's answer), from 0. */
  readonly index: number
  /** Its label, when given as a `LabeledSecret`. */
  readonly label?: string
  /** 72 entries, oldest first, the last the hour under way. */
  readonly perHour: readonly number[]
  /** Their sum. */
  readonly total: number
  /** When it last verified a delivery in this process. */
  readonly lastUsedAt: Date
}
