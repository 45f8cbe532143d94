import type { HeldOrderingKey } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import type { ConnectionDeadline } from './connection.js'

// The ordering keys held now (`store.heldKeys`), indexed in BUCKETS buckets by a hash of the ordering key, each in the
// Cluster slot of its own hash tag: `<prefix>{o:07}held:since` (ordering key by when its holder took it), `:until` (by
// when the holder's lease ends) and `:info` (ordering key to `claim token|fencing token|event type|event id`). A key's
// fence hash carries the same tag (fences.ts), so the scripts that take, renew and free a fence update its bucket in
// the same step, and the ordered events of a Cluster spread over BUCKETS slots rather than all running a script on one
// shard. Times are Redis's clock. Every step that takes a key also forgets a bounded number of entries of its bucket
// whose lease ended (a claim that crashed), so a bucket holds about the keys held now, never the marks.

/** Buckets of the index (and hash tags of the fences): enough to spread over a large Cluster's shards. */
export const BUCKETS = 64

/** The hash tag of an ordering key's bucket: `{o:00}` to `{o:63}`, from an FNV-1a hash of the key's UTF-16 units. */
export function bucketTag(orderingKey: string): string {
  let hash = 0x811c9dc5
  for (let i = 0; i < orderingKey.length; i++) hash = Math.imul(hash ^ orderingKey.charCodeAt(i), 0x01000193)
  const bucket = (hash >>> 0) % BUCKETS
  return `{o:${bucket < 10 ? '0' : ''}${bucket}}`
}

/** The index keys of the bucket with tag `tag`: since, until, info. */
export const bucketKeys = (keyPrefix: string, tag: string) =>
  [`${keyPrefix}${tag}held:since`, `${keyPrefix}${tag}held:until`, `${keyPrefix}${tag}held:info`] as const

/**
 * Lua for the scripts of fences.ts: a bucket's keys as the locals `since`, `until_` and `info`, the clock `now` (ms) and
 * the index's steps. `indexTake` records a holder, `indexRenew` moves its lease's end, `indexFree` forgets it; the
 * caller has checked the fence, whose lock is what holds the key.
 */
export const INDEX_LUA = `
local function forget(keys)
  if #keys == 0 then return end
  redis.call('ZREM', since, unpack(keys))
  redis.call('ZREM', until_, unpack(keys))
  redis.call('HDEL', info, unpack(keys))
end
local function indexTake(okey, claim, fencing, etype, eid, ends)
  forget(redis.call('ZRANGEBYSCORE', until_, '-inf', nowText, 'LIMIT', '0', '100'))
  redis.call('ZADD', since, nowText, okey)
  redis.call('ZADD', until_, ends, okey)
  redis.call('HSET', info, okey, claim .. '|' .. fencing .. '|' .. etype .. '|' .. eid)
end
local function indexRenew(okey, ends) redis.call('ZADD', until_, 'XX', ends, okey) end
local function indexFree(okey) forget({okey}) end
`

/**
 * Lua for the clock: `readClock()` sets `now` (ms) and `micros` (µs) by Redis's clock, and `nowText`, `now` as the
 * command argument it is, cut from TIME's own digits: Redis 7.0 formats a number given to a command with `%.17g`
 * (about 4,500 instructions each), `string.format('%d')` costs a fifth of that. Only the steps that need the time read
 * it (a take and a renewal, not a complete or a release).
 */
export const CLOCK_LUA = `
local now, nowText, micros
local function readClock()
  local clock = redis.call('TIME')
  local seconds, us = tonumber(clock[1]), tonumber(clock[2])
  now = seconds * 1000 + math.floor(us / 1000)
  nowText = clock[1] .. string.sub('00000' .. clock[2], -6, -4)
  micros = seconds * 1000000 + us
end
`

/**
 * KEYS: a bucket's since, until, info; ARGV: limit. The bucket's keys held longest first (by time taken, then key: the
 * sorted set's order), skipping (and forgetting) those whose lease ended, reading at most twice the limit plus 100
 * entries: {key, since, until, info...}.
 */
const LIST_SCRIPT = `local since, until_, info = KEYS[1], KEYS[2], KEYS[3]
${CLOCK_LUA}${INDEX_LUA}
readClock()
local limit = tonumber(ARGV[1])
local found, gone, start, count = {}, {}, 0, 0
while count < limit and start < limit * 2 + 100 do
  local keys = redis.call('ZRANGE', since, start, start + limit - 1, 'WITHSCORES')
  if #keys == 0 then break end
  for i = 1, #keys, 2 do
    local key = keys[i]
    local ends = tonumber(redis.call('ZSCORE', until_, key) or '0')
    local held = redis.call('HGET', info, key)
    if ends > now and held and count < limit then
      count = count + 1
      table.insert(found, key)
      table.insert(found, keys[i + 1])
      table.insert(found, tostring(ends))
      table.insert(found, held)
    elseif ends <= now then
      table.insert(gone, key)
    end
  end
  start = start + limit
end
forget(gone)
return found`

interface ListCommands {
  payhooksHeldList(since: string, until: string, info: string, limit: number): Promise<string[]>
}

const INFO = /^(?:[^|]*)\|([^|]*)\|([^|]*)\|(.*)$/s

/**
 * `store.heldKeys`: reads every bucket (BUCKETS scripts, each reading at most about twice `limit` plus 100 entries),
 * then keeps the `limit` held longest.
 */
export function heldKeyList(client: Redis | Cluster, keyPrefix: string, deadline: ConnectionDeadline) {
  client.defineCommand('payhooksHeldList', { numberOfKeys: 3, lua: LIST_SCRIPT })
  const commands = client as unknown as ListCommands
  const buckets = Array.from({ length: BUCKETS }, (_, i) => bucketKeys(keyPrefix, `{o:${i < 10 ? '0' : ''}${i}}`))
  return async (limit: number): Promise<HeldOrderingKey[]> => {
    const replies = await deadline.call(
      () => Promise.all(buckets.map((keys) => commands.payhooksHeldList(...keys, limit))),
      'held keys got no reply from Redis',
    )
    const held: HeldOrderingKey[] = []
    for (const reply of replies) {
      for (let i = 0; i + 3 < reply.length; i += 4) {
        const match = INFO.exec(reply[i + 3] as string)
        if (!match) continue
        held.push({
          key: reply[i] as string,
          eventId: match[3] as string,
          eventType: match[2] as string,
          since: new Date(Number(reply[i + 1])),
          expiresAt: new Date(Number(reply[i + 2])),
          token: Number(match[1]),
        })
      }
    }
    held.sort((a, b) => a.since.getTime() - b.since.getTime() || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    return held.slice(0, limit)
  }
}
