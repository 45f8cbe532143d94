import type { JournalRecord } from '@payhooks/core'

// Layout (see docs/guide/journal.md): per event one list `e:<event_id>` of its records, oldest first, its TTL pushed
// to its newest record's time plus retention; per hour and shard a sorted set `t:<hour>:<shard>` of every record
// by time, a sorted set `o:<outcome>:<hour>:<shard>` for outcomes other than the routine `processed` and
// `duplicate` (so a list of failures walks failures only), and a hash `c:<hour>:<shard>` of counts per minute and
// outcome; each hour key expires at the hour's end plus retention. Per shard a sorted set `h:<shard>` names the hour
// keys written, scored by hour, so a list walks only those. The shard is a hash of the event id: on a
// Cluster the keys carry no hash tag, so an hour's writes spread over `shards` slots, never all on one node.
// A record is written once: its hour index's ZADD says whether it is new, and only a new one goes further (a batch
// written again after a lost reply keeps nothing twice).

export const HOUR = 3_600_000
export const MINUTE = 60_000
/** Outcomes so common that a list filtered by them walks the hour's index of every record instead. */
export const ROUTINE = new Set(['processed', 'duplicate'])

type Encoded = [
  string,
  number,
  string,
  string,
  string | null,
  number,
  string,
  string,
  number,
  number,
  (string | null)?,
  number?,
]

/** A record as one JSON array (the script reads `at` at [2], `outcome` at [7] and `copies` at [12], from 1). */
export function encode(r: JournalRecord): string {
  const fields: unknown[] = [
    r.id,
    r.at,
    r.eventId,
    r.eventType,
    r.createdAt,
    r.status,
    r.outcome,
    r.instance,
    r.durationMs,
    r.secretIndex,
  ]
  if (r.copies !== undefined) fields.push(r.secretLabel ?? null, r.copies)
  else if (r.secretLabel !== undefined) fields.push(r.secretLabel)
  return JSON.stringify(fields)
}

export function decode(text: string): JournalRecord {
  const [id, at, eventId, eventType, createdAt, status, outcome, instance, durationMs, secretIndex, label, copies] =
    JSON.parse(text) as Encoded
  const record: { -readonly [K in keyof JournalRecord]: JournalRecord[K] } = {
    id,
    at,
    eventId,
    eventType,
    createdAt,
    status,
    outcome,
    instance,
    durationMs,
    secretIndex,
  }
  if (typeof label === 'string') record.secretLabel = label
  if (copies !== undefined) record.copies = copies
  return record
}

/** FNV-1a of `text`, for the shard of an event id. */
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** The journal's keys under `keyPrefix`, its event ids spread over `shards`. */
export function journalKeys(keyPrefix: string, shards: number, retentionMs: number) {
  return {
    eventKey: (eventId: string) => `${keyPrefix}e:${eventId}`,
    shardOf: (eventId: string) => hash(eventId) % shards,
    timeKey: (hour: number, shard: number) => `${keyPrefix}t:${hour}:${shard}`,
    outcomeKey: (outcome: string, hour: number, shard: number) => `${keyPrefix}o:${outcome}:${hour}:${shard}`,
    countKey: (hour: number, shard: number) => `${keyPrefix}c:${hour}:${shard}`,
    /** Per shard, the hour keys written (`t:<hour>`, `o:<outcome>:<hour>`), scored by hour: what a list walks. */
    hoursKey: (shard: number) => `${keyPrefix}h:${shard}`,
    /** The hour below which a shard's hour list drops its members. */
    oldestHour: (now: number) => Math.floor((now - retentionMs) / HOUR) - 1,
  }
}

export type JournalKeys = ReturnType<typeof journalKeys>
