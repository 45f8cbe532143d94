import type { OrderingMark, OrderingPosition } from '@payhooks/core'
import { bucketKeys, bucketTag, INDEX_LUA } from './held-keys.js'
import type { Generation, MarkerLayout } from './layout.js'

/** Event types kept as a one-byte code in a mark (fixed: a code, once written, keeps its meaning). */
const EVENT_TYPE_CODES = [
  'merchant_activated_for_payment_type',
  'sale_created_from_batch',
  'transaction_settled',
  'transaction_returned',
]

// Ordering fences (issue 24; layout 2, issue 49). A key held keeps a hash of its own: `<prefix>{o:07}f:<key>`, whose tag
// is the key's bucket of the held-keys index (held-keys.ts), so a script may update both. Fields: `l` the claim token
// holding the key and `e` when its lease ends (Redis's clock, ms), `t` the last fencing token given; it lives as long
// as the hold and is deleted when freed. What stays for the retention is the mark (the newest event handled: time,
// type, id) with the last fencing token, as a field of a shared hash of the same slot (layout.ts). Layout 1 kept the
// mark in the fence hash itself (`a`, `y`, `i`, for the retention): such a mark is still read, the newer of the two
// counting. Fencing tokens are Redis's clock in microseconds unless a kept token is greater, so they still grow
// when a hold's hash goes. Ties on time compare bytes, as JavaScript does for ASCII, not Redis's collation.
//
// The steps that use this Lua declare FENCE_NAMES (fence hash, bucket, marks) and CLOCK_LUA before it, and assign
// them with fenceSetup (as scripts, or as functions of the store's library: store-scripts.ts, functions.ts). On
// standalone Redis the claim script takes the fence in the claim's own step, and complete and release free it in
// theirs (store.ts); on a Cluster the fence's slot is its bucket's, not the event's, so it is a step of its own: taken
// right after the claim (a crash between leaves two leases that run out), and moved on complete before the done
// marker (a crash between makes the retry run the event again, finding the mark at itself: not superseded).

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
  if not mark or not mark[1] then return true end
  local cnum, num = tonumber(mark[1]), tonumber(at)
  if cnum ~= num then return cnum < num end
  if mark[2] ~= etype then return before(mark[2], etype) end
  return before(mark[3], eid)
end

-- The event types' codes as comparisons, not tables: a table built on every run of the script costs more.
local function typeOf(code)
${EVENT_TYPE_CODES.map((type, i) => `  if code == ${i + 1} then return '${type}' end`).join('\n')}
end
local function codeOf(etype)
${EVENT_TYPE_CODES.map((type, i) => `  if etype == '${type}' then return ${i + 1} end`).join('\n')}
end

-- A mark as layout 2 keeps it: the token in 7 bytes, a flag byte (the event type's code, or 0 followed by its length
-- and itself; plus 128 when the time is not a whole number), the time in 6 bytes (or a double), the event id. 54
-- bytes for a 40-character id: under hash-max-listpack-value (64).
local function packMark(token, at, etype, eid)
  local code = codeOf(etype)
  local tail = code and '' or (struct.pack('>H', #etype) .. etype)
  local whole = at == math.floor(at) and math.abs(at) < 2 ^ 47
  local flag = string.char((code or 0) + (whole and 0 or 128))
  return struct.pack('>I7', token) .. flag .. tail .. (whole and struct.pack('>i6', at) or struct.pack('>d', at)) .. eid
end

local function unpackMark(v)
  local token = struct.unpack('>I7', v)
  local flag = string.byte(v, 8)
  local code, pos, etype = flag % 128, 9, nil
  if code == 0 then
    local n = struct.unpack('>H', string.sub(v, 9, 10))
    etype, pos = string.sub(v, 11, 10 + n), 11 + n
  else
    etype = typeOf(code)
  end
  if flag >= 128 then return {token, (struct.unpack('>d', string.sub(v, pos, pos + 7))), etype, string.sub(v, pos + 8)} end
  return {token, (struct.unpack('>i6', string.sub(v, pos, pos + 5))), etype, string.sub(v, pos + 6)}
end

-- The key's layout-2 mark, newest generation first: {token, at, type, id} and the hash holding it, or nothing.
local function readMark()
  local v, key = readGenerations(mbase, gen, mfield)
  if v then return unpackMark(v), key end
  return nil, nil
end

-- The newer of a layout-1 mark (the fence hash's a, y, i) and a layout-2 one, as {at, type, id}.
local function newestOf(a, y, i, m)
  local old = a and {a, y, i} or nil
  if not m then return old end
  local new = {m[2], m[3], m[4]}
  if old and not newer(new[1], new[2], new[3], old) then return old end
  return new
end

local function format(at)
  if type(at) ~= 'number' then return at end
  if at == math.floor(at) and math.abs(at) < 2 ^ 53 then return string.format('%d', at) end
  return string.format('%.17g', at)
end

-- Takes the key for the claim unless another holds it: {'t', fencing token, mark or false}, else {'b', the holder's
-- remaining lease, since when it holds the key or false}.
local function take(claim, leaseText, okey, etype, eid)
  readClock()
  local lease = tonumber(leaseText)
  local f = redis.call('HMGET', fence, 'l', 'e', 't', 'a', 'y', 'i')
  if f[1] and tonumber(f[2]) > now then
    return {'b', tonumber(f[2]) - now, redis.call('ZSCORE', since, okey) or false}
  end
  local m = readMark()
  local n = math.max(math.max(tonumber(f[3]) or 0, m and m[1] or 0) + 1, micros)
  local fencing, ends = string.format('%d', n), string.format('%d', now + lease)
  redis.call('HSET', fence, 'l', claim, 'e', ends, 't', fencing)
  -- A fence read with no field at all is new: nothing may have given it a longer life (a layout-1 mark, upgrade.ts).
  if not (f[1] or f[3] or f[4]) or redis.call('PTTL', fence) < lease then redis.call('PEXPIRE', fence, leaseText) end
  indexTake(okey, claim, fencing, etype, eid, ends)
  local mark = newestOf(f[4], f[5], f[6], m)
  return {'t', n, mark and (format(mark[1]) .. '|' .. mark[2] .. '|' .. mark[3]) or false}
end

-- Renews the claim's hold on the key while it holds it: 1, else 0.
local function renew(claim, leaseText, okey)
  readClock()
  local lease = tonumber(leaseText)
  local f = redis.call('HMGET', fence, 'l', 'e')
  if f[1] ~= claim or tonumber(f[2]) <= now then return 0 end
  local ends = string.format('%d', now + lease)
  redis.call('HSET', fence, 'e', ends)
  if redis.call('PTTL', fence) < lease then redis.call('PEXPIRE', fence, leaseText) end
  indexRenew(okey, ends)
  return 1
end

-- Frees the key if the claim holds it; with a position (at ~= ''), first moves the mark to it when newer, into this
-- generation's hash (dropped from an older one). The mark moves even when the hold was lost: the handlers ran, and
-- the mark is a maximum. While layout-1 instances may run (bridge > 0, upgrade.ts) the mark goes to the fence hash
-- too, where they read it. A hold freed leaves nothing behind but a layout-1 mark.
local function leave(claim, okey, at, etype, eid, markAt, bridge)
  local f = redis.call('HMGET', fence, 'l', 'a', 'y', 'i', 't')
  local mine = f[1] == claim
  if mine then indexFree(okey) end
  local bridged = false
  if at ~= '' then
    local m, where = readMark()
    if newer(at, etype, eid, newestOf(f[2], f[3], f[4], m)) then
      local token = math.max(tonumber(f[5]) or 0, m and m[1] or 0)
      redis.call('HSET', mwrite, mfield, packMark(token, tonumber(at), etype, eid))
      redis.call('PEXPIREAT', mwrite, markAt)
      markLive(mbase, gen, markAt)
      if where and where ~= mwrite then redis.call('HDEL', where, mfield) end
      if bridge ~= '0' then
        redis.call('HSET', fence, 'a', at, 'y', etype, 'i', eid)
        if redis.call('PTTL', fence) < tonumber(bridge) then redis.call('PEXPIRE', fence, bridge) end
        bridged = true
      end
    end
  end
  if not mine then return end
  if not f[2] and not bridged then redis.call('DEL', fence) else redis.call('HDEL', fence, 'l', 'e') end
end
`

/** The names FENCE_LUA reads besides the clock's, which fenceSetup assigns. */
export const FENCE_NAMES = 'fence, since, until_, info, mbase, mfield, gen, mwrite'

/** Assigns FENCE_NAMES from KEYS[first] on (the fence hash, its bucket's since, until and info, the marks) and ARGV. */
export const fenceSetup = (first: number) =>
  `fence, since, until_, info = KEYS[${first}], KEYS[${first + 1}], KEYS[${first + 2}], KEYS[${first + 3}]
mbase, mfield, gen = KEYS[${first + 4}], ARGV[7], tonumber(ARGV[8])
mwrite = mbase .. 'g' .. ARGV[8]`

/** Keys of a fence script: the fence hash, its bucket's since, until and info, then the marks' hash (no generation). */
export const FENCE_KEYS = 5

/** The fence of one claim: its position and its keys (fence hash, bucket's since, until, info, marks). */
export interface Fence {
  readonly eventId: string
  readonly position: OrderingPosition
  readonly keys: readonly string[]
  /** The mark's field. */
  readonly field: Buffer
}

export function fenceOf(layout: MarkerLayout, keyPrefix: string, eventId: string, position: OrderingPosition): Fence {
  const tag = bucketTag(position.key)
  const { field, base } = layout.mark(position.key, tag)
  const keys = [`${keyPrefix}${tag}f:${position.key}`, ...bucketKeys(keyPrefix, tag), base]
  return { eventId, position, keys, field }
}

/** A fence script's answer to `take`: taken (fencing token, mark) or busy (lease left, held since). */
export type TakeReply = ['t', number, string | null, number?] | ['b', number, string | null]

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

/**
 * ARGV of the fence scripts: claim token, lease, ordering key, event type, event id, the position's time when the
 * mark is to move (else ''), the mark's field, the generation and its expiry, the bridge (upgrade.ts).
 */
export const fenceArgs = (
  fence: Fence,
  token: string,
  leaseMs: number,
  applied: boolean,
  bridgeMs: number,
  { gen, expireAt }: Generation,
) =>
  [
    token,
    leaseMs,
    fence.position.key,
    fence.position.eventType,
    fence.eventId,
    applied ? String(fence.position.at) : '',
    fence.field,
    gen,
    expireAt,
    bridgeMs,
  ] as const

export type FenceArgs = ReturnType<typeof fenceArgs>

/** The fenceArgs a take reads (the first ones), all a claim's script is given of them; the claim's adds the marker's field. */
export const TAKE_ARGS = 8

/** The calls of FENCE_LUA on fenceArgs. */
export const TAKE_CALL = 'take(ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5])'
export const LEAVE_CALL = 'leave(ARGV[1], ARGV[3], ARGV[6], ARGV[4], ARGV[5], ARGV[9], ARGV[10])'
export const RENEW_CALL = 'renew(ARGV[1], ARGV[2], ARGV[3])'

/** On a Cluster, the fence's own steps (KEYS: the fence's keys) as setup and body: the take, refused by a full Redis... */
export const CLUSTER_CLAIM_STEPS = {
  payhooksFenceTake: { setup: fenceSetup(1), body: `return ${TAKE_CALL}` },
}

/** ...and the steps of a fence taken, which a full Redis still runs (allow-oom.ts); as scripts in store-scripts.ts. */
export const CLUSTER_HOLDER_STEPS = {
  payhooksFenceLeave: { setup: fenceSetup(1), body: `${LEAVE_CALL}\nreturn 0` },
  payhooksFenceRenew: { setup: fenceSetup(1), body: `return ${RENEW_CALL}` },
}
