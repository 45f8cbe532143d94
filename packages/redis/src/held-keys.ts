import type { HeldOrderingKey } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import type { ConnectionDeadline } from './connection.js'

// The ordering keys held now (`store.heldKeys`), indexed beside the fences: `<prefix>{held}:since` (ordering key by
// when its holder took it), `:until` (by when the holder's lease ends) and `:info` (ordering key to `claim token|
// fencing token|event type|event id`). One hash tag keeps the three in one slot of a Cluster, so one script updates
// them atomically; but each fence lives in the slot of its own key, so the index is a step of its own after the
// fence's (Cluster refuses a script across slots). A crash between the two leaves an entry that drops out when its
// lease ends; a fence step that failed leaves none. Times are the index's Redis clock. Every step also forgets a
// bounded number of entries whose lease ended, so the index holds about the keys held now, never the marks.

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function forget(keys)
  if #keys == 0 then return end
  redis.call('ZREM', KEYS[1], unpack(keys))
  redis.call('ZREM', KEYS[2], unpack(keys))
  redis.call('HDEL', KEYS[3], unpack(keys))
end
forget(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 100))
`

/**
 * ARGV: step (`take`, `renew`, `free`), ordering key, claim token, then for `take` the fencing token, event type, event
 * id and for `take` and `renew` the lease in ms. `renew` and `free` change the entry only when the claim holds it.
 */
const STEP_SCRIPT = `${NOW}
local key, claim = ARGV[2], ARGV[3]
if ARGV[1] == 'take' then
  redis.call('ZADD', KEYS[1], now, key)
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[7]), key)
  redis.call('HSET', KEYS[3], key, claim .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|' .. ARGV[6])
  return 1
end
local info = redis.call('HGET', KEYS[3], key)
if not info or string.sub(info, 1, #claim + 1) ~= claim .. '|' then return 0 end
if ARGV[1] == 'renew' then
  redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[4]), key)
else
  forget({key})
end
return 1`

/**
 * ARGV: limit. The keys held longest first (by time taken, then key: the sorted set's order), skipping (and
 * forgetting) those whose lease ended, reading at most twice the limit plus 100 entries: {key, since, until, info...}.
 */
const LIST_SCRIPT = `${NOW}
local limit = tonumber(ARGV[1])
local found, gone, start, count = {}, {}, 0, 0
while count < limit and start < limit * 2 + 100 do
  local keys = redis.call('ZRANGE', KEYS[1], start, start + limit - 1, 'WITHSCORES')
  if #keys == 0 then break end
  for i = 1, #keys, 2 do
    local key = keys[i]
    local ends = tonumber(redis.call('ZSCORE', KEYS[2], key) or '0')
    local info = redis.call('HGET', KEYS[3], key)
    if ends > now and info and count < limit then
      count = count + 1
      table.insert(found, key)
      table.insert(found, keys[i + 1])
      table.insert(found, tostring(ends))
      table.insert(found, info)
    elseif ends <= now then
      table.insert(gone, key)
    end
  end
  start = start + limit
end
forget(gone)
return found`

interface HeldCommands {
  payhooksHeldStep(since: string, until: string, info: string, ...args: (string | number)[]): Promise<number>
  payhooksHeldList(since: string, until: string, info: string, limit: number): Promise<string[]>
}

/** The index of the ordering keys held now: see the comment above. */
export function heldKeyIndex(client: Redis | Cluster, keyPrefix: string, deadline: ConnectionDeadline) {
  client.defineCommand('payhooksHeldStep', { numberOfKeys: 3, lua: STEP_SCRIPT })
  client.defineCommand('payhooksHeldList', { numberOfKeys: 3, lua: LIST_SCRIPT })
  const commands = client as unknown as HeldCommands
  const keys = [`${keyPrefix}{held}:since`, `${keyPrefix}{held}:until`, `${keyPrefix}{held}:info`] as const
  // The index only informs: a failed step never fails the claim, whose fence is what holds the key.
  const step = (...args: (string | number)[]) =>
    deadline
      .call(() => commands.payhooksHeldStep(...keys, ...args), 'held-key index got no reply from Redis')
      .then(
        () => {},
        () => {},
      )
  return {
    take: (key: string, claim: string, fencingToken: number, eventType: string, eventId: string, leaseMs: number) =>
      step('take', key, claim, String(fencingToken), eventType, eventId, leaseMs),
    renew: (key: string, claim: string, leaseMs: number) => step('renew', key, claim, leaseMs),
    /** Since when the key's holder took it (ms since the epoch), when the index knows; never rejects. */
    since: (key: string): Promise<number | undefined> =>
      deadline
        .call(() => client.zscore(keys[0], key), 'held-key index got no reply from Redis')
        .then(
          (score) => (score === null ? undefined : Number(score)),
          () => undefined,
        ),
    free: (key: string, claim: string) => step('free', key, claim),
    async list(limit: number): Promise<HeldOrderingKey[]> {
      const reply = await deadline.call(
        () => commands.payhooksHeldList(...keys, limit),
        'held keys got no reply from Redis',
      )
      const held: HeldOrderingKey[] = []
      for (let i = 0; i + 3 < reply.length; i += 4) {
        const match = /^(?:[^|]*)\|([^|]*)\|([^|]*)\|(.*)$/s.exec(reply[i + 3] as string)
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
      return held
    },
  }
}
