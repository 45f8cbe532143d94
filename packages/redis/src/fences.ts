import type { OrderingMark, OrderingPosition } from '@payhooks/core'
import { bucketKeys, bucketTag, CLOCK_LUA, INDEX_LUA } from './held-keys.js'

// Ordering fences (issue 24), one hash per ordering key: `<prefix>{o:07}f:<key>`, whose tag is the key's bucket of
// the held-keys index (held-keys.ts), so a script may update both. Fields: `l` the claim token holding the key and `e`
// when its lease ends (Redis's clock, ms), both only while held; `t` the last fencing token given; `a`, `y` and `i`
// the newest event handled (its time, type and id: the mark; each field short enough for Redis to keep the hash
// in its compact listpack encoding, about a third of the size of a hash table). The hash is kept for the retention once a mark is set; a key freed with no mark (its
// events failed, or never ran) is deleted, its token with it: fencing tokens are Redis's clock in microseconds unless
// the kept token is greater, so they still grow. Ties on time compare bytes, as JavaScript does for ASCII, not Redis's
// collation.
//
// The scripts that use this Lua declare the locals `fence` (the hash), `since`, `until_` and `info` (the bucket), and
// start with CLOCK_LUA. On standalone Redis the claim script takes the fence in the claim's own step, and complete
// and release free it in theirs (store.ts); on a Cluster the fence's slot is its bucket's, not the event's, so it is
// a step of its own: taken right after the claim (a crash between leaves two leases that run out), and moved on
// complete before the done marker (a crash between makes the retry run the event again, finding the mark at itself:
// not superseded).

export const FENCE_LUA = `${INDEX_LUA}
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- Whether the position (at, etype, eid) is newer than the mark {at, type, id} (by time, then type, then id).
local function newer(at, etype, eid, mark)
  if not mark[1] then return true end
  local cnum, num = tonumber(mark[1]), tonumber(at)
  if cnum ~= num then return cnum < num end
  if mark[2] ~= etype then return before(mark[2], etype) end
  return before(mark[3], eid)
end

-- Takes the key for the claim unless another holds it: {'t', fencing token, mark or false}, else {'b', the holder's
-- remaining lease, since when it holds the key or false}.
local function take(claim, lease, retention, okey, etype, eid)
  local f = redis.call('HMGET', fence, 'l', 'e', 't', 'a', 'y', 'i')
  if f[1] and tonumber(f[2]) > now then
    return {'b', tonumber(f[2]) - now, redis.call('ZSCORE', since, okey) or false}
  end
  local n = math.max((tonumber(f[3]) or 0) + 1, micros)
  local fencing = string.format('%.0f', n)
  redis.call('HSET', fence, 'l', claim, 'e', now + lease, 't', fencing)
  redis.call('PEXPIRE', fence, math.max(lease, retention))
  indexTake(okey, claim, fencing, etype, eid, now + lease)
  return {'t', n, f[4] and (f[4] .. '|' .. f[5] .. '|' .. f[6]) or false}
end

-- Renews the claim's hold on the key while it holds it: 1, else 0.
local function renew(claim, lease, okey)
  local f = redis.call('HMGET', fence, 'l', 'e')
  if f[1] ~= claim or tonumber(f[2]) <= now then return 0 end
  redis.call('HSET', fence, 'e', now + lease)
  if redis.call('PTTL', fence) < lease then redis.call('PEXPIRE', fence, lease) end
  indexRenew(okey, now + lease)
  return 1
end

-- Frees the key if the claim holds it; with a position (at ~= ''), first moves the mark to it when newer, kept for
-- the retention. The mark moves even when the hold was lost: the handlers ran, and the mark is a maximum.
local function leave(claim, okey, at, etype, eid, retention)
  local f = redis.call('HMGET', fence, 'l', 'a', 'y', 'i')
  local mine = f[1] == claim
  if mine then
    redis.call('HDEL', fence, 'l', 'e')
    indexFree(okey)
  end
  if at ~= '' and newer(at, etype, eid, {f[2], f[3], f[4]}) then
    redis.call('HSET', fence, 'a', at, 'y', etype, 'i', eid)
    redis.call('PEXPIRE', fence, retention)
  elseif mine and not f[2] then
    redis.call('DEL', fence)
  end
end
`

/** The locals FENCE_LUA needs, from KEYS[first] on: the fence hash, then its bucket's since, until and info. */
export const fenceLocals = (first: number) =>
  `local fence, since, until_, info = KEYS[${first}], KEYS[${first + 1}], KEYS[${first + 2}], KEYS[${first + 3}]
${CLOCK_LUA}`

/** The fence of one claim: its position and its four keys (fence hash, bucket's since, until, info). */
export interface Fence {
  readonly eventId: string
  readonly position: OrderingPosition
  readonly keys: readonly [string, string, string, string]
}

export function fenceOf(keyPrefix: string, eventId: string, position: OrderingPosition): Fence {
  const tag = bucketTag(position.key)
  return { eventId, position, keys: [`${keyPrefix}${tag}f:${position.key}`, ...bucketKeys(keyPrefix, tag)] }
}

/** A fence script's answer to `take`: taken (fencing token, mark) or busy (lease left, held since). */
export type TakeReply = ['t', number, string | null] | ['b', number, string | null]

export type FenceEntry =
  | { newest: OrderingMark | undefined; fencingToken: number }
  | { busyForMs: number | undefined; heldSince: number | undefined }

export function fenceEntry(reply: TakeReply): FenceEntry {
  if (reply[0] === 'b') {
    return {
      busyForMs: reply[1] >= 0 ? reply[1] : undefined,
      heldSince: reply[2] === null ? undefined : Number(reply[2]),
    }
  }
  const mark = reply[2]
  return { newest: mark === null ? undefined : parseMark(mark), fencingToken: Number(reply[1]) }
}

function parseMark(value: string): OrderingMark | undefined {
  const match = /^([^|]*)\|([^|]*)\|(.*)$/s.exec(value)
  if (!match) return undefined
  return { at: Number(match[1]), eventType: match[2] as string, eventId: match[3] as string }
}

/** ARGV of `take` after the claim token: lease, retention, ordering key, event type, event id. */
export const takeArgs = (fence: Fence, leaseMs: number, retentionMs: number) =>
  [leaseMs, retentionMs, fence.position.key, fence.position.eventType, fence.eventId] as const

/** ARGV of `leave` after the claim token: retention, ordering key, then (when `applied`) at, event type, event id. */
export const leaveArgs = (fence: Fence, applied: boolean, retentionMs: number) =>
  applied
    ? ([retentionMs, fence.position.key, String(fence.position.at), fence.position.eventType, fence.eventId] as const)
    : ([retentionMs, fence.position.key, '', '', ''] as const)

/** The calls of FENCE_LUA on these arguments (ARGV[1] the claim token, then takeArgs, leaveArgs or lease and key). */
export const TAKE_CALL = 'take(ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6])'
export const LEAVE_CALL = 'leave(ARGV[1], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[2])'
export const RENEW_CALL = 'renew(ARGV[1], tonumber(ARGV[2]), ARGV[3])'

/** On a Cluster, the fence's own steps (KEYS: the fence's four keys): the take, refused by a full Redis... */
export const CLUSTER_CLAIM_SCRIPTS = {
  payhooksFenceTake: `${fenceLocals(1)}${FENCE_LUA}\nreturn ${TAKE_CALL}`,
}

/** ...and the steps of a fence taken, which a full Redis still runs (allow-oom.ts). */
export const CLUSTER_HOLDER_SCRIPTS = {
  payhooksFenceLeave: `${fenceLocals(1)}${FENCE_LUA}\n${LEAVE_CALL}\nreturn 0`,
  payhooksFenceRenew: `${fenceLocals(1)}${FENCE_LUA}\nreturn ${RENEW_CALL}`,
}
