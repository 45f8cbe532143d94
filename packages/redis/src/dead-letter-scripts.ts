// The dead-letter store's Lua scripts. Keys, all under the prefix's hash tag (on a Cluster they share a slot, so a
// script may touch them all): one hash per letter (`letter:<id>`), the legacy `index` (score parkedAt, member id),
// and sorted sets whose members `<parkedAt, 15 digits>:<id>` sort like a list (parkedAt, then eventId): `x:` sets
// of equal scores, one per status (`p`, `r`, `a` for all) and per status plus code (`c:`), event type (`t:`), or
// both (`ct:`); and `y:` sets of the same members and families scored by the event's `created_at` (ms; letters
// without one are in no `y:` set). A count with any filter is one ZLEXCOUNT (a created window: one ZCOUNT) and a
// page one ZRANGEBYLEX from a bound (a keyset cursor, or a time): O(log n), whatever the backlog. Every change of a
// letter moves its members in the same script. Replayed letters wait in `expiry` (score: when they go), and each
// write forgets a few whose time has come, members and all.
const LIB = `
local P = ARGV[1]
local function family(x, s, code, typ)
  local base = P..x..':'..s
  return {base, base..':c:'..code, base..':t:'..typ, base..':ct:'..code..':'..typ}
end
local function member(at, id) return string.format('%015d', tonumber(at)) .. ':' .. id end
local function put(op, statuses, m, code, typ, created)
  for _, s in ipairs(statuses) do
    for _, key in ipairs(family('x', s, code, typ)) do
      if op == 'add' then redis.call('ZADD', key, 0, m) else redis.call('ZREM', key, m) end
    end
    for _, key in ipairs(family('y', s, code, typ)) do
      if op ~= 'add' then redis.call('ZREM', key, m)
      elseif created and created ~= '' then redis.call('ZADD', key, tonumber(created), m) end
    end
  end
end
local function short(status) if status == 'replayed' then return 'r' end return 'p' end
local function purge(now)
  local due = redis.call('ZRANGEBYSCORE', P..'expiry', '-inf', now, 'LIMIT', 0, 20)
  for _, id in ipairs(due) do
    local k = P..'letter:'..id
    local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt')
    if f[1] == 'replayed' then
      put('rem', {'r', 'a'}, member(f[4], id), f[2], f[3])
      redis.call('DEL', k)
      redis.call('ZREM', P..'index', id)
    end
    redis.call('ZREM', P..'expiry', id)
  end
end
`

// A replayed letter, or a parked one of other bytes, is left as it is; either way the letter as it stands is
// returned, so the receiver tells which.
// Not flagged allow-oom (allow-oom.ts), unlike a claim's steps: a letter carries a whole body, and a full Redis
// taking letters past maxmemory grows until the host kills it, losing what it had acknowledged. A full Redis refuses
// a new letter at its first write (the HSET, nothing written before it), so the park fails, the delivery gets its
// own non-2XX answer and the service retries it; a letter already parked is parked again (its first write is a
// ZREM, and a script that wrote is never stopped midway).
// ARGV: prefix, id, type, body, headers, code, reason, createdAt, parkedAt, now.
export const PARK_SCRIPT = `${LIB}
local k = P..'letter:'..ARGV[2]
local kept = redis.call('HMGET', k, 'status', 'body', 'code', 'eventType', 'parkedAt')
if kept[1] == 'replayed' or (kept[1] and kept[2] ~= ARGV[4]) then return redis.call('HGETALL', k) end
if kept[1] then put('rem', {'p', 'a'}, member(kept[5], ARGV[2]), kept[3], kept[4]) end
local first = redis.call('HGET', k, 'firstParkedAt') or ARGV[9]
redis.call('HSET', k, 'eventId', ARGV[2], 'eventType', ARGV[3], 'body', ARGV[4], 'headers', ARGV[5],
  'code', ARGV[6], 'reason', ARGV[7], 'createdAt', ARGV[8], 'parkedAt', ARGV[9], 'firstParkedAt', first,
  'status', 'parked', 'replayedAt', '')
redis.call('HINCRBY', k, 'parkCount', 1)
redis.call('PERSIST', k)
redis.call('ZADD', P..'index', ARGV[9], ARGV[2])
put('add', {'p', 'a'}, member(ARGV[9], ARGV[2]), ARGV[6], ARGV[3], ARGV[8])
purge(ARGV[10])
return redis.call('HGETALL', k)`

// ARGV: prefix, id, replayedAt, replayed retention ms (from now, as a TTL would), now.
export const REPLAYED_SCRIPT = `${LIB}
local k = P..'letter:'..ARGV[2]
local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt', 'createdAt')
if not f[1] then return 0 end
if f[1] == 'parked' then
  local m = member(f[4], ARGV[2])
  put('rem', {'p'}, m, f[2], f[3])
  put('add', {'r'}, m, f[2], f[3], f[5])
end
redis.call('HSET', k, 'status', 'replayed', 'replayedAt', ARGV[3])
redis.call('ZADD', P..'expiry', tonumber(ARGV[5]) + tonumber(ARGV[4]), ARGV[2])
purge(ARGV[5])
return 1`

// ARGV: prefix, id, now.
export const DELETE_SCRIPT = `${LIB}
local k = P..'letter:'..ARGV[2]
local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt')
redis.call('ZREM', P..'index', ARGV[2])
redis.call('ZREM', P..'expiry', ARGV[2])
purge(ARGV[3])
if not f[1] then return 0 end
put('rem', {short(f[1]), 'a'}, member(f[4], ARGV[2]), f[2], f[3])
redis.call('DEL', k)
return 1`

// Letters parked before these sets existed (layout 1: none; layout 2: no `y:` sets): indexed from the legacy index,
// a chunk a call (ARGV: prefix, start rank, chunk, replayed retention ms, now). Idempotent, so instances starting
// together do no harm; a replayed letter already waiting in `expiry` keeps its time there.
export const UPGRADE_SCRIPT = `${LIB}
local ids = redis.call('ZRANGE', P..'index', ARGV[2], tonumber(ARGV[2]) + tonumber(ARGV[3]) - 1)
for _, id in ipairs(ids) do
  local k = P..'letter:'..id
  local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt', 'createdAt')
  if f[1] then
    put('add', {short(f[1]), 'a'}, member(f[4], id), f[2], f[3], f[5])
    if f[1] == 'replayed' and not redis.call('ZSCORE', P..'expiry', id) then
      local left = redis.call('PTTL', k)
      if left < 0 then left = tonumber(ARGV[4]) end
      redis.call('PERSIST', k)
      redis.call('ZADD', P..'expiry', tonumber(ARGV[5]) + left, id)
    end
  end
end
return #ids`

// One step of a walk in list order over a `x:` set's lex range, keeping the members whose `created_at` (their score
// in the `y:` set of the same family, one ZMSCORE: Redis 6.2) is in the window: scans at most ARGV[6] members
// (unpack takes them all at once up to Lua's stack, some 8,000), stops once ARGV[7] matched.
// KEYS: the x: set, the y: set. ARGV: min, max, lowest created ms or '', created ms bound (exclusive) or '',
// '1' newest first, budget, wanted. Returns the matches, the last member scanned ('' for none) and how many.
export const WALK_SCRIPT = `
local budget, wanted = tonumber(ARGV[6]), tonumber(ARGV[7])
local members
if ARGV[5] == '1' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[2], ARGV[1], 'LIMIT', 0, budget)
else
  members = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, budget)
end
if #members == 0 then return {{}, '', 0} end
local lo, hi = tonumber(ARGV[3]), tonumber(ARGV[4])
local scores = redis.call('ZMSCORE', KEYS[2], unpack(members))
local found = {}
for i, m in ipairs(members) do
  local score = scores[i]
  if score then
    local at = tonumber(score)
    if (not lo or at >= lo) and (not hi or at < hi) then
      found[#found + 1] = m
      if #found >= wanted then return {found, m, i} end
    end
  end
end
return {found, members[#members] or '', #members}`
