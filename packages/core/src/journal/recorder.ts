import type { WebhookError } from '../errors/index.js'
import type { Log } from '../logging/log.js'
import type { VerifiedSecret } from '../verify/secrets.js'
import { Copies, type Counter } from './copies.js'
import { dropClass, Losses } from './losses.js'
import type { Journal, JournalRecord } from './types.js'

/** Buffered answers are written at least this often. */
export const FLUSH_MS = 250
/** A batch this large is written at once, without waiting for the timer. */
export const BATCH = 256
/** The most answers buffered or waiting to be written again; past it (the journal down or hung) some are dropped. */
export const MAX_BUFFERED = 10_000
/** The most records one write takes (a backlog written again goes in batches of this many). */
export const MAX_BATCH = 1000
/** A write (with the journal's `init`) not settled by then counts as failed, and is tried again. */
export const WRITE_TIMEOUT_MS = 10_000
/** How long a flush (a read's, or `close()`'s) waits for the writes before it goes on. */
export const FLUSH_WAIT_MS = 3_000
/** The wait before a failed write is tried again: doubled each time, up to {@link RETRY_MAX_MS}. */
export const RETRY_MS = 1_000
export const RETRY_MAX_MS = 30_000
/** A failing journal is logged at most this often. */
const LOG_EVERY_MS = 60_000

/** What an answered delivery tells the journal; the receiver's `IncomingDelivery` is one. */
export interface JournaledDelivery {
  readonly event: JournaledEvent | undefined
  readonly error: WebhookError | undefined
  readonly verifiedWith: VerifiedSecret | undefined
  /** How its work ended when not in failure (`processed`, `duplicate`...). */
  readonly outcome?: string | undefined
}

/** The fields of an event the journal keeps. */
export interface JournaledEvent {
  readonly event_id: string
  readonly event_type: string
  readonly created_at?: unknown
}

/** The default `instance`: host name and process id, where the runtime tells them. */
export function defaultInstance(): string {
  const runtime = (globalThis as { process?: { pid?: number; getBuiltinModule?: (id: string) => unknown } }).process
  const os = runtime?.getBuiltinModule?.('node:os') as { hostname?: () => string } | undefined
  let host = 'unknown'
  try {
    host = os?.hostname?.() || host
  } catch {}
  return runtime?.pid === undefined ? host : `${host}:${runtime.pid}`
}

/** A random prefix of this process's record ids, so ids are unique across the fleet. */
function processId(): string {
  const bytes = new Uint8Array(6)
  globalThis.crypto.getRandomValues(bytes)
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
}

/** The event a signed delivery answered: parsed, or as far as its refusal (schema, age, clock) knew it. */
function eventOf(delivery: JournaledDelivery): { id: string; type: string; createdAt: unknown } | undefined {
  const event = delivery.event ?? (delivery.error as { event?: JournaledEvent } | undefined)?.event
  if (event) return { id: event.event_id, type: event.event_type, createdAt: event.created_at }
  const error = delivery.error as (WebhookError & { createdAt?: unknown }) | undefined
  if (error?.eventId && error.eventType) return { id: error.eventId, type: error.eventType, createdAt: error.createdAt }
  return undefined
}

/** `work`, or `fallback` once `ms` pass first. */
function within<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(fallback), ms)
    ;(timer as { unref?: () => void }).unref?.()
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/**
 * The glue between the receiver and its {@link Journal}: each answer to a signed delivery becomes a record in a
 * buffer, written in batches (every {@link FLUSH_MS}, or at {@link BATCH} records) one after the other, so the
 * delivery never waits for the journal. Unsigned and wrongly signed deliveries (no `verifiedWith`) write nothing.
 * A batch the journal refuses (or leaves unsettled) goes back to the head of the buffer and is tried again with
 * backoff, its `init` too; when the buffer is full, the oldest copies are dropped first, and what was dropped is
 * written once the journal takes writes again ({@link Losses}). Copies of one event past the first few in a minute
 * are counted ({@link Copies}).
 */
export class JournalRecorder {
  /** Records waiting to be written, oldest first; the batch being written is not among them. */
  private queue: JournalRecord[] = []
  private inFlight = 0
  /** Set by the timer and by flushes: write everything waiting, not only full batches. */
  private due = false
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  private draining: Promise<void> | undefined = undefined
  private retryAt = 0
  private retryMs = 0
  private retryTimer: ReturnType<typeof setTimeout> | undefined = undefined
  private stopped = false
  private ready: Promise<void> | undefined = undefined
  private readonly idPrefix = processId()
  private sequence = 0
  private loggedAt = Number.NEGATIVE_INFINITY
  private droppedLoggedAt = Number.NEGATIVE_INFINITY
  /** For `health()`: whether the last batch was refused. */
  private lastWriteFailed = false
  private readonly copies = new Copies((records) => {
    for (const record of records) this.push(record)
  })
  private readonly losses: Losses

  constructor(
    readonly journal: Journal,
    readonly instance: string,
    private readonly log: Log,
  ) {
    this.losses = new Losses(() => this.nextId(), instance)
  }

  /** A delivery was answered `status` (`outcome`); `arrivedAt` is its first byte. */
  answered(delivery: JournaledDelivery, outcome: string, status: number, arrivedAt: number): void {
    const secret = delivery.verifiedWith
    if (!secret) return
    const event = eventOf(delivery)
    if (!event) return
    // `processed` and `queued` are the event's own run (and the hot path's): never counted as copies.
    if (outcome === 'processed' || outcome === 'queued') {
      this.push(this.record(event, secret, outcome, status, arrivedAt))
      return
    }
    const verdict = this.copies.admit(event.id, outcome, Date.now())
    if (verdict === 'counted') return
    const record = this.record(event, secret, outcome, status, arrivedAt)
    if (verdict === 'keep') this.push(record)
    else this.copies.start(record)
  }

  /** The work of a delivery answered at the deadline settled after it: `<outcome>_late`, status 0. */
  late(delivery: JournaledDelivery, arrivedAt: number): void {
    const secret = delivery.verifiedWith
    const event = secret && eventOf(delivery)
    if (!secret || !event) return
    const outcome = `${delivery.outcome ?? delivery.error?.code ?? 'internal_error'}_late`
    this.push(this.record(event, secret, outcome, 0, arrivedAt))
  }

  /** A dead letter of `event` was replayed (`replay_processed`, `replay_failed`...), status 0. */
  replayed(event: JournaledEvent, secret: VerifiedSecret, status: string, startedAt: number): void {
    const found = { id: event.event_id, type: event.event_type, createdAt: event.created_at }
    this.push(this.record(found, secret, `replay_${status}`, 0, startedAt))
  }

  private nextId(): string {
    return this.idPrefix + (this.sequence++).toString(36).padStart(8, '0')
  }

  private record(
    event: { id: string; type: string; createdAt: unknown },
    secret: VerifiedSecret,
    outcome: string,
    status: number,
    arrivedAt: number,
  ): JournalRecord {
    const at = Date.now()
    const record: Counter = {
      id: this.nextId(),
      at,
      eventId: event.id,
      eventType: event.type,
      createdAt: typeof event.createdAt === 'string' ? event.createdAt : null,
      status,
      outcome,
      instance: this.instance,
      durationMs: Number.isNaN(arrivedAt) ? 0 : Math.max(0, at - arrivedAt),
      secretIndex: secret.index,
    }
    // Set only when there is one, without spreading a fresh object per answer.
    if (secret.label !== undefined) record.secretLabel = secret.label
    return record
  }

  private push(record: JournalRecord): void {
    if (this.stopped) {
      this.losses.drop(record)
      return
    }
    this.queue.push(record)
    if (this.queue.length + this.inFlight > MAX_BUFFERED) this.makeRoom()
    if (this.queue.length >= BATCH) void this.drain()
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined
        this.due = true
        void this.drain()
      }, FLUSH_MS)
      ;(this.timer as { unref?: () => void }).unref?.()
    }
  }

  /** The buffer is full: a tenth of it is dropped, by {@link dropClass}, oldest first within each class. */
  private makeRoom(): void {
    let excess = this.queue.length + this.inFlight - Math.floor(MAX_BUFFERED * 0.9)
    const dropped = new Uint8Array(this.queue.length)
    for (let kind = 0; kind <= 4 && excess > 0; kind++) {
      for (let i = 0; i < this.queue.length && excess > 0; i++) {
        if (dropped[i] === 0 && dropClass(this.queue[i] as JournalRecord) === kind) {
          dropped[i] = 1
          excess--
        }
      }
    }
    const kept: JournalRecord[] = []
    this.queue.forEach((record, i) => {
      if (dropped[i]) this.losses.drop(record)
      else kept.push(record)
    })
    this.queue = kept
    this.warnDropped()
  }

  /** The journal, initialized once it succeeds (a rejected `init` is called again on the next write). */
  init(): Promise<void> {
    if (this.ready) return this.ready
    const ready = Promise.resolve().then(() => this.journal.init?.())
    this.ready = ready
    ready.catch(() => {
      if (this.ready === ready) this.ready = undefined
    })
    return ready
  }

  /** Writes batches while a full one waits, or everything once due; one write at a time. */
  private drain(): Promise<void> {
    this.draining ??= this.run().finally(() => {
      this.draining = undefined
    })
    return this.draining
  }

  private async run(): Promise<void> {
    while (this.queue.length >= BATCH || (this.due && this.queue.length > 0)) {
      if (Date.now() < this.retryAt) {
        this.scheduleRetry()
        return
      }
      const batch = this.queue.splice(0, MAX_BATCH)
      this.inFlight = batch.length
      const written = await this.write(batch)
      this.inFlight = 0
      if (!written) {
        this.queue = batch.concat(this.queue)
        if (this.queue.length > MAX_BUFFERED) this.makeRoom()
        this.retryMs = Math.min(Math.max(RETRY_MS, this.retryMs * 2), RETRY_MAX_MS)
        this.retryAt = Date.now() + this.retryMs
        this.scheduleRetry()
        return
      }
      this.retryMs = 0
      this.retryAt = 0
      if (this.losses.pending) this.queue.unshift(...this.losses.take())
    }
    if (this.queue.length === 0) this.due = false
  }

  /** The next try at `retryAt`. */
  private scheduleRetry(): void {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    this.retryTimer = undefined
    if (this.stopped) return
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = undefined
        this.due = true
        void this.drain()
      },
      Math.max(0, this.retryAt - Date.now()),
    )
    ;(this.retryTimer as { unref?: () => void }).unref?.()
  }

  /** Writes one batch (the journal's `init` first); whether the journal took it within {@link WRITE_TIMEOUT_MS}. */
  private async write(batch: JournalRecord[]): Promise<boolean> {
    let initialized = false
    const work = this.init().then(() => {
      initialized = true
      return this.journal.write(batch)
    })
    const settled = work.then(
      () => undefined,
      (error: unknown) => ({ error }),
    )
    const result = await within<undefined | { error: unknown }>(settled, WRITE_TIMEOUT_MS, { error: 'timeout' })
    if (result === undefined) {
      this.lastWriteFailed = false
      if (this.losses.unlogged > 0) this.warnDropped()
      return true
    }
    // An `init` that never settled is called again next time.
    if (!initialized) this.ready = undefined
    this.lastWriteFailed = true
    this.warn(result.error)
    return false
  }

  /**
   * Writes what is buffered now (counters of copies included), trying a failed journal at once; waits at most
   * `waitMs`, and never rejects (what could not be written stays buffered and is tried again).
   */
  flush(waitMs = FLUSH_WAIT_MS): Promise<void> {
    this.copies.release()
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.retryAt = 0
    this.due = true
    const all = async () => {
      do await this.drain()
      while (this.queue.length > 0 && this.retryAt === 0 && !this.stopped)
    }
    return within(all(), waitMs, undefined)
  }

  /** `close()`: a last flush, then nothing more is tried; what is left unwritten is logged as lost. */
  async close(): Promise<void> {
    this.copies.roll()
    await this.flush()
    this.stopped = true
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer)
    const left = this.queue.length + this.inFlight
    if (left === 0) return
    this.loggedAt = Number.NEGATIVE_INFINITY
    this.log.warn(
      { code: 'journal_write_failed', lost: left },
      `[payhooks] journal: ${left} answers not written by close(); deliveries are unaffected`,
    )
  }

  /** Whether the last batch written was refused, and when the full buffer last dropped an answer (ms). */
  trouble(): { writeFailed: boolean; droppedAt: number } {
    return { writeFailed: this.lastWriteFailed, droppedAt: this.losses.droppedAt }
  }

  /** At most once a minute: a write refused (or unsettled). */
  private warn(error: unknown): void {
    const now = Date.now()
    if (now - this.loggedAt < LOG_EVERY_MS) return
    this.loggedAt = now
    const waiting = this.queue.length + this.inFlight
    const why = error === 'timeout' ? `did not settle within ${WRITE_TIMEOUT_MS} ms` : 'was refused'
    this.log.warn(
      { code: 'journal_write_failed', waiting },
      `[payhooks] journal: a write ${why}; ${waiting} answers wait to be written again; deliveries are unaffected`,
    )
  }

  /** At most once a minute: answers dropped by the full buffer since the last such line. */
  private warnDropped(): void {
    const now = Date.now()
    if (now - this.droppedLoggedAt < LOG_EVERY_MS) return
    this.droppedLoggedAt = now
    const dropped = this.losses.unlogged
    this.losses.unlogged = 0
    this.log.warn(
      { code: 'journal_dropped', dropped, waiting: this.queue.length + this.inFlight },
      `[payhooks] journal: ${dropped} answers dropped, its buffer full (${MAX_BUFFERED}); the journal records how many, and when, once it takes writes again; deliveries are unaffected`,
    )
  }
}
