import type { OrderingMark, OrderingPosition } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import type { ConnectionDeadline } from './connection.js'
import { heldKeyIndex } from './held-keys.js'

// Ordering fences (issue 24). Each ordering key has three keys, `<prefix>{fence:<key>}:lock` (the token of the claim
// handling an event of the key, expiring with its lease), `:mark` (the newest event handled: `at|type|id`) and
// `:token` (the last fencing token given for the key, kept for the retention). They differ only after the hash tag's closing brace, so a Cluster keeps them in one slot whatever the prefix or key,
// and one script may touch both. The event's own claim key lives elsewhere (its slot follows the event id), so the
// fence is a step of its own, next to the claim's: taken right after the claim (a crash between leaves two leases
// that run out), and moved on complete before the done marker (a crash between makes the retry run the event again,
// finding the mark at itself: not superseded). Ties on time compare bytes, as JavaScript does for ASCII, not
// Redis's collation.

/**
 * Takes the lock for the token unless another holds it: {fencing token, mark (or false)}, else {the holder's
 * remaining lease}. The fencing token is one more than the key's last, or Redis's clock in microseconds when that is
 * greater (so a key whose last token expired with its retention still gets a greater one); exact in Lua's doubles.
 */
const ENTER_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local now = redis.call('TIME')
  local last = tonumber(redis.call('GET', KEYS[3]) or '0') or 0
  local n = math.max(last + 1, tonumber(now[1]) * 1000000 + tonumber(now[2]))
  redis.call('SET', KEYS[3], string.format('%.0f', n), 'PX', ARGV[3])
  return {n, redis.call('GET', KEYS[2]) or false}
end
return {redis.call('PTTL', KEYS[1])}`

/**
 * Frees the lock if the token holds it; with a position, moves the mark to it when newer (by time, then type, then
 * id), keeping it for the retention. The mark moves even when the lock was lost: the handlers ran, and the mark is
 * a maximum, so moving it never undoes a newer one.
 */
const LEAVE_SCRIPT = `
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if ARGV[2] == '' then return 0 end
local at = tonumber(ARGV[2])
local current = redis.call('GET', KEYS[2])
if current then
  local cat, ctype, cid = string.match(current, '^([^|]*)|([^|]*)|(.*)$')
  local cnum = tonumber(cat)
  if cnum > at then return 0 end
  if cnum == at then
    if before(ARGV[3], ctype) then return 0 end
    if ctype == ARGV[3] and not before(cid, ARGV[4]) then return 0 end
  end
end
redis.call('SET', KEYS[2], ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4], 'PX', ARGV[5])
return 1`

const EXTEND_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`

interface FenceCommands {
  payhooksFenceEnter(
    lock: string,
    mark: string,
    counter: string,
    token: string,
    leaseMs: number,
    retentionMs: number,
  ): Promise<[number] | [number, string | null]>
  payhooksFenceLeave(
    lock: string,
    mark: string,
    token: string,
    at: string,
    eventType: string,
    eventId: string,
    retentionMs: number,
  ): Promise<number>
  payhooksFenceExtend(lock: string, token: string, leaseMs: number): Promise<number>
}

/** The fence of one claim, kept in this process from its claim to its complete or release. */
interface Held {
  readonly eventId: string
  readonly position: OrderingPosition
  readonly lock: string
  readonly mark: string
}

export type FenceEntry =
  | { newest: OrderingMark | undefined; fencingToken: number }
  | { busyForMs: number | undefined; heldSince: number | undefined }

function parseMark(value: string): OrderingMark | undefined {
  const match = /^([^|]*)\|([^|]*)\|(.*)$/s.exec(value)
  if (!match) return undefined
  return { at: Number(match[1]), eventType: match[2] as string, eventId: match[3] as string }
}

/** The Redis store's fences: see the comment above. Tokens stay in this process, as the claims they go with. */
export function redisFences(
  client: Redis | Cluster,
  keyPrefix: string,
  retentionMs: number,
  deadline: ConnectionDeadline,
) {
  client.defineCommand('payhooksFenceEnter', { numberOfKeys: 3, lua: ENTER_SCRIPT })
  client.defineCommand('payhooksFenceLeave', { numberOfKeys: 2, lua: LEAVE_SCRIPT })
  client.defineCommand('payhooksFenceExtend', { numberOfKeys: 1, lua: EXTEND_SCRIPT })
  const commands = client as unknown as FenceCommands
  const held = new Map<string, Held>()
  const { call } = deadline
  const index = heldKeyIndex(client, keyPrefix, deadline)

  const leave = (token: string, fence: Held, applied: boolean) =>
    call(
      () =>
        commands.payhooksFenceLeave(
          fence.lock,
          fence.mark,
          token,
          applied ? String(fence.position.at) : '',
          fence.position.eventType,
          fence.eventId,
          retentionMs,
        ),
      'fence release got no reply from Redis',
    )

  return {
    /** Takes the position's key for the claim `token` of `eventId`; the mark, or how long another claim holds it. */
    async enter(eventId: string, token: string, position: OrderingPosition, leaseMs: number): Promise<FenceEntry> {
      const base = `${keyPrefix}{fence:${position.key}}`
      const fence: Held = { eventId, position, lock: `${base}:lock`, mark: `${base}:mark` }
      const reply = await call(
        () => commands.payhooksFenceEnter(fence.lock, fence.mark, `${base}:token`, token, leaseMs, retentionMs),
        'fence got no reply from Redis',
        () => {
          commands.payhooksFenceLeave(fence.lock, fence.mark, token, '', '', '', retentionMs).catch(() => {})
        },
      )
      if (reply.length === 1) {
        // Since when: from the index of held keys (another slot), for the 409's message.
        return { busyForMs: reply[0] >= 0 ? reply[0] : undefined, heldSince: await index.since(position.key) }
      }
      held.set(token, fence)
      const [fencingToken, mark] = reply
      await index.take(position.key, token, Number(fencingToken), position.eventType, eventId, leaseMs)
      return { newest: mark === null ? undefined : parseMark(mark), fencingToken: Number(fencingToken) }
    },
    async extend(token: string, leaseMs: number): Promise<void> {
      const fence = held.get(token)
      if (fence === undefined) return
      await call(() => commands.payhooksFenceExtend(fence.lock, token, leaseMs), 'fence extend got no reply from Redis')
      await index.renew(fence.position.key, token, leaseMs)
    },
    /** Frees the key of the claim `token`, first moving its mark when the event was handled (`applied`). */
    async leave(token: string, applied: boolean): Promise<void> {
      const fence = held.get(token)
      if (fence === undefined) return
      try {
        await leave(token, fence, applied)
      } finally {
        held.delete(token)
        await index.free(fence.position.key, token)
      }
    },
    /** The ordering keys held now, longest held first. */
    heldKeys: (limit: number) => index.list(limit),
  }
}
