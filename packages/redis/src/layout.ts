import * as nodeCrypto from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'
import { hasHashTag } from './validations.js'

// Layout 2 (issue 49): what a handled event leaves behind is a record in a small shared string, not a key of its own.
//
// Done markers: `<prefix>{<tag>}<generation>:<buckets>:<bucket>`, small strings per time generation, as many as the
// generation's traffic needs, each a run of RECORD-byte records: the first 16 bytes of SHA-256 of the event id, then
// the first 8 bytes of the claim's body digest (without one, the next 8 bytes of the id's SHA-256). A generation is a
// quarter of the retention; its strings expire whole a retention after the generation ends, so a marker lives between
// one retention and 1.25 of one (1.125 on average). A claim reads every generation that may still hold a marker
// younger than the retention, plus the next one for the instances' clocks, with one `MGET` whose strings the client
// searches (claim.ts): an `HGET` per generation in listpack hashes, the layout's first form, cost Redis a command and
// a field-by-field search each (15k instructions at 90 fields). The bucket is the id hash's first 32 bits modulo the
// bucket count, which a generation chooses when it starts (as many as the previous generation ended with, a quarter
// of them when its sampled bucket stayed nearly empty, `minBuckets` at first) and multiplies by four whenever a string
// reaches GROW_AT records: a generation has levels (64, 256, 1,024 buckets...), each string about GROW_AT records at
// most (3.6 KB), just under a size Redis's allocation of an appended string grows past. The counts live in
// `<prefix>{<tag>}n`, a string with each live generation and its top level's count times 16 plus its levels less one,
// read with the markers; the claim answers its generation's count value, which the complete passes back so as not to
// read the counts again. On standalone Redis the tag is `d`; on a Cluster the tag names the Cluster slot of the
// event's own key (the claim's, `<prefix><event id>`, as in layout 1), so one script or `MGET` reads the claim and the
// markers: 16,384 tags, one count string each, one bucket each to start with.
//
// Fence marks: `<prefix>{o:NN}m<sub>g<generation>`, in the slot of the ordering key's fence hash and held-keys bucket
// (held-keys.ts), 16 hashes per bucket: the field is 16 bytes of SHA-256 of the ordering key, the value the last
// fencing token and the mark (fences.ts); `<prefix>{o:NN}mn` lists the generations the bucket's hashes have, so a
// read skips those without any (GENERATIONS_LUA). A claim in progress keeps its own key as in layout 1, and so does an
// ordering key's hold: instances of layout 1 and 2 see each other's claims and holds (upgrade.ts).

/** Generations per retention. */
export const GENERATIONS = 4
/**
 * Generations a read covers, newest first: the next one (a writer's clock ahead of the reader's), the current, then
 * GENERATIONS back (a marker a retention old by the reader's clock, give or take the clocks' skew).
 */
export const READS = GENERATIONS + 2
/** A generation's first bucket count on standalone Redis (and on a Cluster whose prefix holds a hash tag). */
export const MIN_BUCKETS = 64
/**
 * Records at which a done-marker string makes its generation add a level with four times the buckets: Redis 7.0
 * reallocates an appended string at 1, 2, 5, 11, 27, 64 and 150 records of 24 bytes, so a string stops growing just
 * under the room its last allocation made (about 24.4 bytes a record when full).
 */
export const GROW_AT = 149
/** A done marker's bytes: 16 of the event id's SHA-256, then 8 of the claim's body digest (or of the id's, past those). */
export const RECORD = 24
/** Events whose places a layout keeps (`marker`): a cache, cleared whole when full. */
const RECENT = 4096
/** Mark hashes per held-keys bucket: at most 36, a sub is one base-36 character (GENERATIONS_LUA strips it). */
export const MARK_SUBS = 16

// Node's one-shot `hash` (1.2 µs here against 1.9 for `createHash`); a runtime without it (an older Bun) hashes as before.
const oneShot = nodeCrypto.hash as typeof nodeCrypto.hash | undefined
/** SHA-256 of `text`. */
const sha256 = (text: string): Buffer =>
  oneShot ? oneShot('sha256', text, 'buffer') : nodeCrypto.createHash('sha256').update(text).digest()
const hash16 = (text: string) => sha256(text).subarray(0, 16)

/**
 * A place in layout 2: the hash key without its generation (`base`, a script adds `g<generation>`), the generation
 * written now and its hash's expiry. A script reads generations `gen + 1` down to `gen + 2 - READS`.
 */
export interface Generation {
  readonly gen: number
  readonly expireAt: number
  /** The bucket counts' expiry: a generation after expireAt, past every hash they describe (clocks a generation apart). */
  readonly countsAt: number
}

/**
 * Lua for the marks' generations: `readGenerations(base, gen, field)` reads `field` in the generations of `base` around
 * `gen`, newest first (the value and its hash, or nothing), and `markLive(base, gen, expireAt)` records that `base`'s
 * generation `gen` has a hash. Only generations that have one are read: the bucket's (the tag's) list of them,
 * `<prefix>{o:NN}mn` (`base` less its one-character sub, plus `n`), 4 bytes each, newest first, read once a script
 * (the local `live`); it expires with its newest generation's hashes, after all of them. Reading the six generations
 * blindly cost a new ordering key six `HGET`s in each of its two scripts.
 */
export const GENERATIONS_LUA = `
local live
local function liveMarks(base)
  if not live then live = redis.call('GET', string.sub(base, 1, -2) .. 'n') or '' end
  return live
end

local function readGenerations(base, gen, field)
  local s = liveMarks(base)
  for pos = 1, #s, 4 do
    local g = struct.unpack('>I4', s, pos)
    if g <= gen + 1 and g > gen + 1 - ${READS} then
      local key = string.format('%sg%d', base, g)
      local v = redis.call('HGET', key, field)
      if v then return v, key end
    end
  end
  return nil, nil
end

local function markLive(base, gen, expireAt)
  local s = liveMarks(base)
  local kept, newest = {gen}, true
  for pos = 1, #s, 4 do
    local g = struct.unpack('>I4', s, pos)
    if g == gen then return end
    if g > gen then newest = false end
    if g > gen + 1 - ${READS} then kept[#kept + 1] = g end
  end
  table.sort(kept, function(x, y) return x > y end)
  for i = 1, #kept do kept[i] = struct.pack('>I4', kept[i]) end
  live = table.concat(kept)
  local key = string.sub(base, 1, -2) .. 'n'
  if newest then redis.call('SET', key, live, 'PXAT', expireAt) else redis.call('SET', key, live, 'KEEPTTL') end
end
`

/**
 * Lua for done markers (the Done markers above). A marker hash is a string of RECORD-byte records (the field, then the
 * value), appended to, read whole by a claim (`MGET`, claim.ts) and searched for the field at a record's start. The
 * counts are a string of 8-byte entries, a live generation and its count value (top level's bucket count times 16,
 * plus its levels less one), one GET and a few struct.unpack a read. Keys are formatted with `string.format('%d')`:
 * Lua's own number-to-string (`..`) costs about 2,700 instructions a number. `findMarker(base, field, h, gen)` reads
 * the generations around `gen`: the value and its hash, or nothing; `markerHash(base, h, gen, min, countsAt)` is the
 * hash a marker of generation `gen` goes to (starting the generation), with the counts and its own count value and
 * bucket count; `appendedTo(...)`, after a record, sets a new hash's expiry (the same from every instance: the
 * generation's) and adds a level when the hash reached GROW_AT records. `h` is the id hash's first 32 bits (the
 * client's): Lua hashes nothing.
 */
export const MARKERS_LUA = `
local function recordIn(s, field)
  local at = string.find(s, field, 1, true)
  while at and (at - 1) % ${RECORD} ~= 0 do at = string.find(s, field, at + 1, true) end
  if at then return string.sub(s, at + 16, at + ${RECORD - 1}) end
  return nil
end

local function findMarker(base, field, h, gen)
  local s = redis.call('GET', base .. 'n')
  if not s then return nil, nil, 0 end
  local mine = 0
  for pos = 1, #s, 8 do
    local g, v = struct.unpack('>I4I4', s, pos)
    if g == gen then mine = v end
    if g <= gen + 1 and g > gen + 1 - ${READS} then
      local levels = v % 16
      local c = (v - levels) / 16
      for _ = 0, levels do
        local key = string.format('%s%d:%d:%d', base, g, c, h % c)
        local records = redis.call('GET', key)
        if records then
          local m = recordIn(records, field)
          if m then return m, key, mine end
        end
        c = c / 4
      end
    end
  end
  return nil, nil, mine
end

-- The counts less generations past every read, with gen's count value set to v.
local function setCount(counts, s, gen, v, countsAt)
  local kept = {}
  for pos = 1, #s, 8 do
    local g = struct.unpack('>I4', s, pos)
    if g ~= gen and g > gen + 1 - ${READS} then kept[#kept + 1] = string.sub(s, pos, pos + 7) end
  end
  kept[#kept + 1] = struct.pack('>I4I4', gen, v)
  redis.call('SET', counts, table.concat(kept))
  redis.call('PEXPIREAT', counts, countsAt)
end

local function markerHash(base, h, gen, min, countsAt)
  min = tonumber(min)
  local counts = base .. 'n'
  local s = redis.call('GET', counts) or ''
  local v, p
  for pos = 1, #s, 8 do
    local g, w = struct.unpack('>I4I4', s, pos)
    if g == gen then v = w elseif g == gen - 1 then p = w end
  end
  if not v then
    local c = min
    if p then
      local levels = p % 16
      c = (p - levels) / 16
      if levels == 0 and c > min and redis.call('STRLEN', base .. (gen - 1) .. ':' .. c .. ':0') < ${(GROW_AT / 16) * RECORD} then
        c = c / 4
      end
    end
    v = c * 16
    setCount(counts, s, gen, v, countsAt)
  end
  local c = (v - v % 16) / 16
  return string.format('%s%d:%d:%d', base, gen, c, h % c), counts, v, c
end

-- The hash a marker of generation gen goes to: the top level of a hint (gen's count value as a claim read it, 0 for
-- none), else as markerHash says. A hint older than a level another instance added since still names a level the
-- claims read: a record appended there is found.
local function markerTarget(base, h, gen, min, countsAt, hint)
  if hint > 0 then
    local c = (hint - hint % 16) / 16
    return string.format('%s%d:%d:%d', base, gen, c, h % c)
  end
  return (markerHash(base, h, gen, min, countsAt))
end

-- A level more for generation gen of base when c is still its top level: its count value rewritten in place (SETRANGE
-- keeps the counts' expiry).
local function addLevel(base, gen, c)
  local counts = base .. 'n'
  local s = redis.call('GET', counts)
  if not s then return end
  for pos = 1, #s, 8 do
    local g, v = struct.unpack('>I4I4', s, pos)
    if g == gen and (v - v % 16) / 16 == c and v % 16 < 15 then
      redis.call('SETRANGE', counts, pos + 3, struct.pack('>I4', c * 64 + v % 16 + 1))
      return
    end
  end
end

-- After a record appended to the hash named key (<base><gen>:<count>:<bucket>), now len bytes long: a new hash's
-- expiry (the same from every instance: the generation's), and from GROW_AT records a level more for its generation,
-- its base, generation and bucket count read from its name (on that rare path only).
local function appendedTo(key, len, expireAt)
  if len == ${RECORD} then redis.call('PEXPIREAT', key, expireAt) end
  if len < ${GROW_AT * RECORD} then return end
  local base, gen, c = string.match(key, '^(.*})(%d+):(%d+):%d+$')
  if base then addLevel(base, tonumber(gen), tonumber(c)) end
end
`

/** CRC16/XMODEM, Redis Cluster's key hash. */
function crc16(bytes: Buffer): number {
  let crc = 0
  for (const byte of bytes) {
    crc ^= byte << 8
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc
}

/** The Cluster slot of `key`, hash tags included. */
export function slotOf(key: string): number {
  const open = key.indexOf('{')
  if (open >= 0) {
    const close = key.indexOf('}', open + 1)
    if (close > open + 1) key = key.slice(open + 1, close)
  }
  return crc16(Buffer.from(key)) % 16384
}

let slotTags: string[] | undefined
/** A short hash tag for each Cluster slot (the first base-36 numbers that land in it): the same in every process. */
function tagOfSlot(slot: number): string {
  if (!slotTags) {
    const tags: string[] = new Array(16384)
    let left = 16384
    for (let n = 0; left > 0; n++) {
      const tag = n.toString(36)
      const s = crc16(Buffer.from(tag)) % 16384
      if (tags[s] === undefined) {
        tags[s] = tag
        left--
      }
    }
    slotTags = tags
  }
  return slotTags[slot] as string
}

/** Where one event's done marker (or one ordering key's mark) goes and is looked for. */
export interface Place {
  readonly field: Buffer
  readonly base: string
}

/**
 * Where one event's done marker goes: also the id hash's first 32 bits, the generations' first bucket count, and the
 * value of a marker kept without a digest (the 8 bytes of the id's SHA-256 after the field: no body's digest starts so
 * but by a 2^-64 chance, where zeros would be a test's digest of a small number).
 */
export interface MarkerPlace extends Place {
  readonly h: number
  readonly min: number
  readonly none: Buffer
}

/** The layout's keys for a store: `fullPrefix` is the client's own `keyPrefix` (ioredis adds it) plus the store's. */
export function markerLayout(
  client: Redis | Cluster,
  keyPrefix: string,
  retentionMs: number,
  minBuckets = MIN_BUCKETS,
) {
  const cluster = (client as { isCluster?: boolean }).isCluster === true
  const clientPrefix = (client as { options?: { keyPrefix?: string } }).options?.keyPrefix ?? ''
  const fullPrefix = clientPrefix + keyPrefix
  // With a hash tag in the prefix every key is in one slot already: buckets by hash, as on standalone Redis.
  const bySlot = cluster && !hasHashTag(fullPrefix)
  const generationMs = Math.ceil(retentionMs / GENERATIONS)
  // The places of recent events: a claim's, found again by its completion or release without hashing the id again.
  const recent = new Map<string, MarkerPlace>()
  return {
    /** The generation written now, and its hash's expiry. */
    generation(now = Date.now()): Generation {
      const gen = Math.floor(now / generationMs)
      const expireAt = (gen + 1) * generationMs + retentionMs
      return { gen, expireAt, countsAt: expireAt + generationMs }
    },
    marker(eventId: string): MarkerPlace {
      const known = recent.get(eventId)
      if (known !== undefined) return known
      const sum = sha256(eventId)
      const field = sum.subarray(0, 16)
      const tag = bySlot ? tagOfSlot(slotOf(fullPrefix + eventId)) : 'd'
      const min = bySlot ? 1 : minBuckets
      const place = {
        field,
        base: `${keyPrefix}{${tag}}`,
        h: field.readUInt32BE(0),
        min,
        none: sum.subarray(16, RECORD),
      }
      if (recent.size >= RECENT) recent.clear()
      recent.set(eventId, place)
      return place
    },
    /** `tag` is the ordering key's held-keys bucket tag (`{o:NN}`). */
    mark(orderingKey: string, tag: string): Place {
      const field = hash16(orderingKey)
      const sub = ((field[2] as number) % MARK_SUBS).toString(36)
      return { field, base: `${keyPrefix}${tag}m${sub}` }
    },
  }
}

export type MarkerLayout = ReturnType<typeof markerLayout>

/** The done marker's value: the first 8 bytes of a claim's digest, from its token (`<id>:<32 hex>`), or `none`. */
export function markerValue(token: string, none: Buffer): Buffer {
  const colon = token.indexOf(':')
  return colon < 0 ? none : Buffer.from(token.slice(colon + 1, colon + 17), 'hex')
}

/** The value of the record of `field` in a marker hash's records, as hex. */
export function recordIn(records: Buffer, field: Buffer): string | undefined {
  for (let at = records.indexOf(field); at >= 0; at = records.indexOf(field, at + 1)) {
    if (at % RECORD === 0) return records.toString('hex', at + 16, at + RECORD)
  }
  return undefined
}
