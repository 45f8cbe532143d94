import { parseCreatedAt, signedEventTime } from '../time/parse.js'
import type { RetryingEvent, RetryingEvents } from './types.js'

/** The most events kept in detail; past it, the one first seen longest ago loses its detail (still counted). */
export const MAX_RETRYING = 1000
/** The most events counted (an id and a time each, about 100 bytes); past it, the one first seen longest ago. */
export const MAX_RETRYING_COUNTED = 1_000_000
/** The service stops retrying an event 72 hours after it was created: one not seen for longer is dropped. */
const GIVEN_UP_MS = 73 * 3_600_000

interface Entry {
  eventId: string
  eventType: string
  createdAt: string | null
  /** `createdAt` in ms, or NaN. */
  createdMs: number
  firstSeen: number
  lastSeen: number
  attempts: number
  lastOutcome: string
  lastStatus: number
}

/**
 * The events this process answered non-2XX and not 2XX since, by event id: every one counted in `ids` (with when
 * last seen), the last {@link MAX_RETRYING} first seen kept in detail in `entries`. A Map keeps insertion order,
 * which is first-seen order: the oldest-seen is the first key.
 */
export class Retrying {
  readonly entries = new Map<string, Entry>()
  /** Every event counted, with when it was last answered non-2XX. */
  readonly ids = new Map<string, number>()

  failed(event: { event_id: string; event_type: string }, outcome: string, status: number, now: number): void {
    if (!this.ids.has(event.event_id) && this.ids.size >= MAX_RETRYING_COUNTED) {
      this.ids.delete(this.ids.keys().next().value as string)
    }
    this.ids.set(event.event_id, now)
    const known = this.entries.get(event.event_id)
    if (known) {
      known.attempts++
      known.lastSeen = now
      known.lastOutcome = outcome
      known.lastStatus = status
      return
    }
    if (this.entries.size >= MAX_RETRYING) this.entries.delete(this.entries.keys().next().value as string)
    const signed = signedEventTime(event)
    this.entries.set(event.event_id, {
      eventId: event.event_id,
      eventType: event.event_type,
      createdAt: signed?.text ?? null,
      createdMs: signed ? parseCreatedAt(signed.text) : Number.NaN,
      firstSeen: now,
      lastSeen: now,
      attempts: 1,
      lastOutcome: outcome,
      lastStatus: status,
    })
  }

  handled(eventId: string): void {
    if (this.ids.delete(eventId)) this.entries.delete(eventId)
  }

  /** The tracked count and the entry with the oldest `created_at` (by first seen when it has none). */
  read(now: number): RetryingEvents {
    let oldest: Entry | undefined
    let oldestAt = Number.POSITIVE_INFINITY
    for (const entry of this.entries.values()) {
      if (entry.lastSeen < now - GIVEN_UP_MS) {
        this.entries.delete(entry.eventId)
        this.ids.delete(entry.eventId)
        continue
      }
      const at = Number.isNaN(entry.createdMs) ? entry.firstSeen : entry.createdMs
      if (at < oldestAt) {
        oldest = entry
        oldestAt = at
      }
    }
    if (this.ids.size > this.entries.size) {
      for (const [eventId, lastSeen] of this.ids) if (lastSeen < now - GIVEN_UP_MS) this.ids.delete(eventId)
    }
    return { count: this.ids.size, oldest: oldest ? view(oldest) : null }
  }
}

function view(entry: Entry): RetryingEvent {
  return {
    eventId: entry.eventId,
    eventType: entry.eventType,
    createdAt: entry.createdAt,
    firstSeen: new Date(entry.firstSeen),
    lastSeen: new Date(entry.lastSeen),
    attempts: entry.attempts,
    lastOutcome: entry.lastOutcome,
    lastStatus: entry.lastStatus,
  }
}
