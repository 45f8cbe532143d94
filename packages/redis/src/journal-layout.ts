import type { JournalRecord } from '@payhooks/core'

// Layout (see docs/guide/journal.md). The event id's hash picks a shard; each shard's keys carry a hash tag of its own
// (`{j<shard>.<n>}`, see shardTags), so a script touches one slot, and a Cluster spreads the shards evenly over its
// primaries. Per shard:
// - `…r` and `…n`, streams of the records (`r`: the routine `processed` and `duplicate`; `n`: every other outcome, so a
//   list of failures walks failures only), one field each, its text compact (see `encodeLine`). An entry's id is the
//   record's `at`, or the stream's newest id when that is later (a late record): `at` is kept as the difference.
//   Trimmed by MINID to the retention; listpack nodes keep the ids delta-encoded.
// - `…i:<hour>:<buckets>:<bucket>`, hashes (kept small, so listpack-encoded) from a 32-bit hash of the event id to its entries
//   of that hour of `at` ("<stream><ms after the hour, base 36>[-<seq>]", comma-separated); they expire with the hour.
// - `…m`, a hash per hour of `at`: `b<hour>` the bucket counts of its index (a count is added, 4 times larger, as the
//   hour fills), `n<hour>` how many events it indexes.
// - `…l`, a hash per hour of entry ids: the most an entry's id runs ahead of its `at` (what a list reads beyond its
//   window to find late records).
// - `…d:<hour>`, per hour of entry ids, the dictionary of the strings entries repeat: event types, and instances with
//   their record ids' prefix (`c<code>` the string, `s<string>` its code, `#` the last code given).
// - `…c:<hour>`, counts per minute and outcome.
// The layout before (lists per event and sorted sets per hour, see `legacyKeys`) is read until it expires.

export const HOUR = 3_600_000
export const MINUTE = 60_000
/** Outcomes so common that a list filtered by them walks the stream of every record instead. */
export const ROUTINE = new Set(['processed', 'duplicate'])
/** Separates the fields of a record's text. */
export const US = '\x1f'

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

/** A record as one JSON array: the previous layout's text, and this one's for records a compact text cannot hold. */
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

/** Outcomes written as one character ('' for `processed`); any other as `=` and itself. */
const OUTCOMES = ['processed', 'duplicate', 'handler_failed', 'in_progress', 'queued', 'parked', 'busy']
const ISO_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/
const ISO_MILLIS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

const signed36 = (n: number) => (n < 0 ? `-${(-n).toString(36)}` : n.toString(36))

/** `createdAt` relative to `at`: `~` seconds or `!` milliseconds before it when it is an ISO time, else `=` and it. */
function encodeCreated(createdAt: string | null, at: number): string {
  if (createdAt === null) return ''
  const ms = Date.parse(createdAt)
  if (ISO_SECONDS.test(createdAt) && ms % 1000 === 0 && new Date(ms).toISOString() === `${createdAt.slice(0, -1)}.000Z`)
    return `~${signed36(Math.floor(at / 1000) - ms / 1000)}`
  if (ISO_MILLIS.test(createdAt) && new Date(ms).toISOString() === createdAt) return `!${signed36(at - ms)}`
  return `=${createdAt}`
}

function decodeCreated(text: string, at: number): string | null {
  if (text === '') return null
  const kind = text[0]
  const rest = text.slice(1)
  if (kind === '=') return rest
  const n = rest[0] === '-' ? -Number.parseInt(rest.slice(1), 36) : Number.parseInt(rest, 36)
  if (kind === '~') return new Date((Math.floor(at / 1000) - n) * 1000).toISOString().replace('.000Z', 'Z')
  return new Date(at - n).toISOString()
}

/** Separates a process's record id prefix from its instance in their dictionary entry. */
export const RS = '\x1e'
/** The record ids' last characters kept in an entry (the recorder's counter); the rest goes to the dictionary. */
const SUFFIX = 8

/**
 * The line the write script takes for `record`: "at hash stream copies id outcome suffix process type tail", joined by
 * {@link US}. The script writes the entry's text as "suffix delta processCode typeCode tail", the codes from the
 * shard's dictionary of the hour (`…d:<hour>`): `process` is the id's prefix and the instance, `delta` how far the
 * entry's id runs ahead of `at`. A record whose strings hold a separator or a line break goes as its JSON array
 * (`suffix` empty, `tail` the JSON).
 */
export function encodeLine(r: JournalRecord, hash: number, stream: 'r' | 'n'): string {
  const head = `${r.at}${US}${hash}${US}${stream}${US}${r.copies ?? 1}${US}${r.id}${US}${r.outcome}${US}`
  const label = r.secretLabel === undefined ? '' : `=${r.secretLabel}`
  for (const text of [r.eventId, r.eventType, r.createdAt ?? '', r.instance, label, r.outcome]) {
    if (text.includes(US) || text.includes(RS) || text.includes('\n')) return `${head}${US}${US}${US}${encode(r)}`
  }
  const split = Math.max(0, r.id.length - SUFFIX)
  const outcome = OUTCOMES.indexOf(r.outcome)
  const tail = [
    r.eventId,
    encodeCreated(r.createdAt, r.at),
    r.status === 200 ? '' : r.status,
    outcome === 0 ? '' : outcome > 0 ? outcome : `=${r.outcome}`,
    r.durationMs,
    r.secretIndex === 0 ? '' : r.secretIndex,
  ]
  if (r.copies !== undefined) tail.push(label, r.copies)
  else if (label !== '') tail.push(label)
  return `${head}${r.id.slice(split)}${US}${r.id.slice(0, split)}${RS}${r.instance}${US}${r.eventType}${US}${tail.join(US)}`
}

/** A shard's dictionaries by hour of entry ids: code to string. */
export type Dictionaries = Map<number, Map<string, string>>

/** Adds to `into` the dictionaries a read script returned: hour, then its hash's fields and values, flat. */
export function addDictionaries(into: Dictionaries, flat: (string | string[])[]): Dictionaries {
  for (let i = 0; i < flat.length; i += 2) {
    const fields = flat[i + 1] as string[]
    const codes = new Map<string, string>()
    for (let f = 0; f < fields.length; f += 2) {
      const name = fields[f] as string
      if (name[0] === 'c') codes.set(name.slice(1), fields[f + 1] as string)
    }
    into.set(Number(flat[i]), codes)
  }
  return into
}

/** The record of a stream entry: its id (`<ms>-<seq>`), its text and its shard's dictionaries. */
export function decodeEntry(entryId: string, text: string, dictionaries: Dictionaries): JournalRecord {
  if (text[0] === '[') return decode(text)
  const f = text.split(US)
  const ms = Number(entryId.slice(0, entryId.indexOf('-')))
  const at = ms - (f[1] ? Number.parseInt(f[1], 36) : 0)
  const codes = dictionaries.get(Math.floor(ms / HOUR))
  const process = codes?.get(f[2] as string) ?? RS
  const split = process.indexOf(RS)
  const outcome = f[7] as string
  const record: { -readonly [K in keyof JournalRecord]: JournalRecord[K] } = {
    id: process.slice(0, split) + (f[0] as string),
    at,
    eventId: f[4] as string,
    eventType: codes?.get(f[3] as string) ?? '',
    createdAt: decodeCreated(f[5] as string, at),
    status: f[6] ? Number(f[6]) : 200,
    outcome:
      outcome === '' ? 'processed' : outcome[0] === '=' ? outcome.slice(1) : (OUTCOMES[Number(outcome)] as string),
    instance: process.slice(split + 1),
    durationMs: Number(f[8]),
    secretIndex: f[9] ? Number(f[9]) : 0,
  }
  if (f[10]) record.secretLabel = f[10].slice(1)
  if (f[11]) record.copies = Number(f[11])
  return record
}

/** FNV-1a of `text` from `basis`. */
function fnv(text: string, basis: number): number {
  let h = basis
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** MurmurHash3's finalizer: FNV-1a's low bits follow the text's, and the index takes its buckets from them. */
function mix(h: number): number {
  let x = h
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b)
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35)
  return (x ^ (x >>> 16)) >>> 0
}

/** A Cluster's slot of a hash tag: CRC16 (XMODEM) of it, modulo 16384. */
export function slotOf(tag: string): number {
  let crc = 0
  for (let i = 0; i < tag.length; i++) {
    crc ^= tag.charCodeAt(i) << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}

/**
 * The hash tags of `shards` shards, `j<shard>` then a number chosen so that shard `i` lies in the `i`-th of `shards`
 * equal ranges of slots: a Cluster's primaries, each owning a range, get their share of the shards.
 */
export function shardTags(shards: number): string[] {
  return Array.from({ length: shards }, (_, shard) => {
    const from = Math.floor((shard * 16384) / shards)
    const to = Math.floor(((shard + 1) * 16384) / shards)
    for (let n = 0; ; n++) {
      const slot = slotOf(`j${shard}.${n}`)
      if (slot >= from && slot < to) return `j${shard}.${n}`
    }
  })
}

/** The journal's keys under `keyPrefix`, its event ids spread over `shards`. */
export function journalKeys(keyPrefix: string, shards: number, retentionMs: number) {
  const shardOf = (eventId: string) => fnv(eventId, 0x811c9dc5) % shards
  const tags = shardTags(shards)
  const base = (shard: number) => `${keyPrefix}{${tags[shard]}}`
  return {
    shardOf,
    /** The 32-bit hash an event is indexed by, apart from the shard's. */
    indexHash: (eventId: string) => mix(fnv(eventId, 0x050c5d1f)),
    /** The shard's meta hash; its other keys are this name without the final `m`, and a suffix. */
    metaKey: (shard: number) => `${base(shard)}m`,
    streamKey: (shard: number, routine: boolean) => `${base(shard)}${routine ? 'r' : 'n'}`,
    lateKey: (shard: number) => `${base(shard)}l`,
    countKey: (hour: number, shard: number) => `${base(shard)}c:${hour}`,
    /** The oldest hour of `at` still kept. */
    oldestHour: (now: number) => Math.floor((now - retentionMs) / HOUR),
    legacy: legacyKeys(keyPrefix, shards, retentionMs, shardOf),
  }
}

/**
 * The previous release's keys (read until they expire): per event a list `e:<event_id>`; per hour and shard a sorted
 * set `t:<hour>:<shard>` of every record by time, `o:<outcome>:<hour>:<shard>` for outcomes not routine, counts
 * `c:<hour>:<shard>`; per shard a sorted set `h:<shard>` of the hour keys written.
 */
function legacyKeys(keyPrefix: string, shards: number, retentionMs: number, shardOf: (eventId: string) => number) {
  return {
    eventKey: (eventId: string) => `${keyPrefix}e:${eventId}`,
    shardOf,
    timeKey: (hour: number, shard: number) => `${keyPrefix}t:${hour}:${shard}`,
    outcomeKey: (outcome: string, hour: number, shard: number) => `${keyPrefix}o:${outcome}:${hour}:${shard}`,
    countKey: (hour: number, shard: number) => `${keyPrefix}c:${hour}:${shard}`,
    hoursKey: (shard: number) => `${keyPrefix}h:${shard}`,
    oldestHour: (now: number) => Math.floor((now - retentionMs) / HOUR) - 1,
    shards,
  }
}

export type JournalKeys = ReturnType<typeof journalKeys>
export type LegacyKeys = JournalKeys['legacy']
