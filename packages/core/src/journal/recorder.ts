import type { WebhookError } from '../errors/index.js'
import type { Log } from '../logging/log.js'
import type { VerifiedSecret } from '../verify/secrets.js'
import type { Journal, JournalRecord } from './types.js'

/** Buffered answers are written at least this often. */
export const FLUSH_MS = 250
/** A batch this large is written at once, without waiting for the timer. */
export const BATCH = 256
/** The most answers buffered or waiting to be written; past it (the journal down or hung) new ones are dropped and counted. */
export const MAX_BUFFERED = 10_000
/** A failing journal is logged at most this often. */
const LOG_EVERY_MS = 60_000

/** What an answered delivery tells the journal; the receiver's `IncomingDelivery` is one. */
export interface JournaledDelivery {
  readonly event: { event_id: string; event_type: string; created_at?: unknown } | undefined
  readonly error: WebhookError | undefined
  readonly verifiedWith: VerifiedSecret | undefined
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
  const event = delivery.event ?? (delivery.error as { event?: JournaledDelivery['event'] } | undefined)?.event
  if (event) return { id: event.event_id, type: event.event_type, createdAt: event.created_at }
  const error = delivery.error as (WebhookError & { createdAt?: unknown }) | undefined
  if (error?.eventId && error.eventType) return { id: error.eventId, type: error.eventType, createdAt: error.createdAt }
  return undefined
}

/**
 * The glue between the receiver and its {@link Journal}: each answer to a signed delivery becomes a record in a
 * buffer, written in batches (every {@link FLUSH_MS}, or at {@link BATCH} records) one after the other, so the
 * delivery never waits for the journal. Unsigned and wrongly signed deliveries (no `verifiedWith`) write nothing.
 */
export class JournalRecorder {
  private buffer: JournalRecord[] = []
  private timer: ReturnType<typeof setTimeout> | undefined = undefined
  private writing: Promise<void> = Promise.resolve()
  private ready: Promise<void> | undefined = undefined
  private readonly idPrefix = processId()
  private sequence = 0
  private dropped = 0
  private loggedAt = Number.NEGATIVE_INFINITY
  /** For `health()`: whether the last batch was refused, and when the buffer last dropped an answer. */
  private lastWriteFailed = false
  private droppedAt = Number.NEGATIVE_INFINITY
  /** Answers in batches handed on but not yet written: they count against MAX_BUFFERED (a hung journal). */
  private unwritten = 0

  constructor(
    readonly journal: Journal,
    readonly instance: string,
    private readonly log: Log,
  ) {}

  /** A delivery was answered `status` (`outcome`); `arrivedAt` is its first byte. */
  answered(delivery: JournaledDelivery, outcome: string, status: number, arrivedAt: number): void {
    const secret = delivery.verifiedWith
    if (!secret) return
    const event = eventOf(delivery)
    if (!event) return
    if (this.buffer.length + this.unwritten >= MAX_BUFFERED) {
      this.dropped++
      this.droppedAt = Date.now()
      return
    }
    const at = Date.now()
    const record: { -readonly [K in keyof JournalRecord]: JournalRecord[K] } = {
      id: this.idPrefix + (this.sequence++).toString(36).padStart(8, '0'),
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
    this.buffer.push(record)
    if (this.buffer.length >= BATCH) void this.flush()
    else if (this.timer === undefined) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS)
      ;(this.timer as { unref?: () => void }).unref?.()
    }
  }

  /** The journal, initialized once. */
  init(): Promise<void> {
    this.ready ??= Promise.resolve().then(() => this.journal.init?.())
    return this.ready
  }

  /** Writes what is buffered, after the batches before it; never rejects (a failed batch is logged and dropped). */
  flush(): Promise<void> {
    if (this.timer !== undefined) {
      clearTimeout(this.timer)
      this.timer = undefined
    }
    const batch = this.buffer
    if (batch.length > 0) {
      this.buffer = []
      this.unwritten += batch.length
      this.writing = this.writing
        .then(() => this.write(batch))
        .finally(() => {
          this.unwritten -= batch.length
        })
    }
    return this.writing
  }

  private async write(batch: JournalRecord[]): Promise<void> {
    try {
      await this.init()
      await this.journal.write(batch)
    } catch (error) {
      this.lastWriteFailed = true
      this.failed(batch.length, error)
      return
    }
    this.lastWriteFailed = false
    if (this.dropped > 0) this.failed(0, undefined)
  }

  /** Whether the last batch written was refused, and when the full buffer last dropped an answer (ms). */
  trouble(): { writeFailed: boolean; droppedAt: number } {
    return { writeFailed: this.lastWriteFailed, droppedAt: this.droppedAt }
  }

  private failed(lost: number, error: unknown): void {
    this.dropped += lost
    const now = Date.now()
    if (now - this.loggedAt < LOG_EVERY_MS) return
    this.loggedAt = now
    const cause = error === undefined ? 'the buffer was full' : 'the journal refused a write'
    this.log.warn(
      { code: 'journal_write_failed', dropped: this.dropped },
      `[payhooks] journal: ${this.dropped} answers not written (${cause}); deliveries are unaffected`,
    )
    this.dropped = 0
  }
}
