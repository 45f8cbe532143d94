import { randomBytes } from 'node:crypto'
import type { ClaimResult, WebhookStore } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { allowOomCommands, type ScriptDefinition } from './allow-oom.js'
import { connectionDeadline } from './connection.js'
import {
  CLUSTER_CLAIM_SCRIPTS,
  CLUSTER_HOLDER_SCRIPTS,
  FENCE_LUA,
  type Fence,
  fenceEntry,
  fenceLocals,
  fenceOf,
  LEAVE_CALL,
  leaveArgs,
  RENEW_CALL,
  TAKE_CALL,
  type TakeReply,
  takeArgs,
} from './fences.js'
import { redisHealth } from './health.js'
import { heldKeyList } from './held-keys.js'
import type { RedisStoreOptions } from './types.js'
import { leaseMs as checkLeaseMs, storeOptions } from './validations.js'

/**
 * Value of a handled event's key, followed by `:` and the body digest when its claim had one (`done:3f…`).
 * Owner tokens always contain a '.' before any ':', so they never start with it.
 */
const DONE = 'done'

// One key per event, and one key per script for an unordered event: cluster-safe without hash tags. A claim first sends a plain
// SET NX PX (a new event's only command, cheaper than a script for Redis and the client alike); only when the key
// exists does this script tell a done marker from a live claim, atomically, claiming if the key went meanwhile.
// A claim's value is its token, which carries the body digest after a ':' (`<prefix>.<n>:<digest>`), so the
// scripts that check the owner compare whole values as before; the done marker keeps the digest after `done`.
// It answers the done marker itself, or the live claim's remaining lease and digest.
const CLAIM_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end
local value = redis.call('GET', KEYS[1])
if value == '${DONE}' or string.sub(value, 1, 5) == '${DONE}:' then return value end
return {redis.call('PTTL', KEYS[1]), string.match(value, ':(.*)$') or false}`

// The event key's steps, also run inside the ordered scripts below (on the local `event`, ARGV[1] the claim token).
const COMPLETE_LUA = `
if redis.call('GET', event) == ARGV[1] then
  redis.call('SET', event, '${DONE}' .. (string.match(ARGV[1], ':.*$') or ''), 'PX', ARGV[2])
  return 1
end
return 0`

const EXTEND_LUA = `
if redis.call('GET', event) == ARGV[1] then return redis.call('PEXPIRE', event, ARGV[2]) end
return 0`

const RELEASE_LUA = `
if redis.call('GET', event) == ARGV[1] then return redis.call('DEL', event) end
return 0`

const COMPLETE_SCRIPT = `local event = KEYS[1]${COMPLETE_LUA}`
const EXTEND_SCRIPT = `local event = KEYS[1]${EXTEND_LUA}`
const RELEASE_SCRIPT = `local event = KEYS[1]${RELEASE_LUA}`

// On standalone Redis an ordered event's fence goes with its claim, in one script per step (KEYS: the event's key,
// then the fence's four): the claim takes the fence (or gives the claim back when another holds it), complete moves
// the mark, frees the fence and writes the done marker, release frees both. An ordered event costs two round trips,
// as an unordered one; on a Cluster, four (fences.ts). ARGV: the claim token, then takeArgs or leaveArgs (fences.ts),
// or the lease and ordering key.
const ORDERED_CLAIM_SCRIPT = `local event = KEYS[1]
${fenceLocals(2)}${FENCE_LUA}
if not redis.call('SET', event, ARGV[1], 'NX', 'PX', ARGV[2]) then
  local value = redis.call('GET', event)
  if value == '${DONE}' or string.sub(value, 1, 5) == '${DONE}:' then return value end
  return {redis.call('PTTL', event), string.match(value, ':(.*)$') or false}
end
local taken = ${TAKE_CALL}
if taken[1] == 'b' then redis.call('DEL', event) end
return taken`

// The steps of a claim already taken, which a full Redis still runs (allow-oom.ts); a claim's own are refused.
const ORDERED_HOLDER_SCRIPTS = {
  payhooksOrderedComplete: `local event = KEYS[1]
${fenceLocals(2)}${FENCE_LUA}
${LEAVE_CALL}${COMPLETE_LUA}`,
  payhooksOrderedRelease: `local event = KEYS[1]
${fenceLocals(2)}${FENCE_LUA}
${LEAVE_CALL}${RELEASE_LUA}`,
  payhooksOrderedExtend: `local event = KEYS[1]
${fenceLocals(2)}${FENCE_LUA}
${RENEW_CALL}${EXTEND_LUA}`,
}

type FenceKeys = readonly [string, string, string, string]
type Args = readonly (string | number)[]

/** The claims' scripts: refused by a full Redis, as the claim's `SET NX` is. */
interface ClaimCommands {
  payhooksClaim(key: string, token: string, leaseMs: number): Promise<string | [number, string | null]>
  payhooksOrderedClaim(
    key: string,
    ...rest: [...FenceKeys, string, ...Args]
  ): Promise<string | TakeReply | [number, string | null]>
  payhooksFenceTake(...args: [...FenceKeys, string, ...Args]): Promise<TakeReply>
}

/** The steps of a claim taken: run by a full Redis too (allow-oom.ts). */
interface HolderCommands {
  payhooksExtend(key: string, token: string, leaseMs: number): Promise<number>
  payhooksComplete(key: string, token: string, retentionMs: number): Promise<number>
  payhooksRelease(key: string, token: string): Promise<number>
  payhooksOrderedComplete(key: string, ...rest: [...FenceKeys, string, ...Args]): Promise<number>
  payhooksOrderedRelease(key: string, ...rest: [...FenceKeys, string, ...Args]): Promise<number>
  payhooksOrderedExtend(key: string, ...rest: [...FenceKeys, string, ...Args]): Promise<number>
  payhooksFenceLeave(...args: [...FenceKeys, string, ...Args]): Promise<number>
  payhooksFenceRenew(...args: [...FenceKeys, string, ...Args]): Promise<number>
}

/** Unique per process (72 random bits) and per claim, without a random draw on the hot path. */
const tokenPrefix = randomBytes(9).toString('base64url')
let tokenCounter = 0
const newToken = () => `${tokenPrefix}.${(++tokenCounter).toString(36)}`
const noop = () => {}

const NEVER_READ: [number, null] = [-2, null]

/** The claim script's answer for a live claim: its remaining lease (negative when unknown) and digest. */
function processing([ttl, digest]: [number, string | null]): ClaimResult {
  const result: ClaimResult = ttl >= 0 ? { status: 'processing', retryAfterMs: ttl } : { status: 'processing' }
  if (digest !== null) result.digest = digest
  return result
}

/**
 * Dedupe store on Redis for receivers running as many processes: a claim is an atomic `SET NX PX` on
 * one key (then, only if the key exists, one atomic script reading its state), `extend`, `complete` and
 * `release` only succeed for the claim's owner, and a crashed owner's claim expires with its lease.
 * Takes any `ioredis` client (standalone, Sentinel or Cluster) and never
 * closes it. Calls reject within `commandTimeoutMs` when Redis is down or slow, so the receiver
 * answers 503; the client's own reconnection brings the store back. A full Redis (`maxmemory`, `noeviction`)
 * refuses new claims (503 too), while the renewal, done marker and release of claims taken still run: their
 * scripts carry Redis 7's `allow-oom` flag (a server before Redis 7 gets them unflagged).
 *
 * @example
 * import { Redis } from 'ioredis'
 * import { redisStore } from '@payhooks/redis'
 *
 * const redis = new Redis(process.env.REDIS_URL!)
 * const webhooks = createWebhooks({ secret, store: redisStore(redis, { keyPrefix: 'shop:webhooks:' }) })
 */
export function redisStore(
  client: Redis | Cluster,
  options: RedisStoreOptions = {},
): WebhookStore & { readonly retentionMs: number } {
  const { keyPrefix, retentionMs, commandTimeoutMs } = storeOptions(options)

  // On a Cluster an event's key and its fence are in different slots, which no script may span.
  const cluster = (client as { isCluster?: boolean }).isCluster === true
  const fenceKeys = cluster ? 4 : 5
  client.defineCommand('payhooksClaim', { numberOfKeys: 1, lua: CLAIM_SCRIPT })
  if (cluster)
    client.defineCommand('payhooksFenceTake', { numberOfKeys: 4, lua: CLUSTER_CLAIM_SCRIPTS.payhooksFenceTake })
  else client.defineCommand('payhooksOrderedClaim', { numberOfKeys: 5, lua: ORDERED_CLAIM_SCRIPT })
  const holderScripts: Record<string, ScriptDefinition> = {
    payhooksExtend: { numberOfKeys: 1, lua: EXTEND_SCRIPT },
    payhooksComplete: { numberOfKeys: 1, lua: COMPLETE_SCRIPT },
    payhooksRelease: { numberOfKeys: 1, lua: RELEASE_SCRIPT },
  }
  for (const [name, lua] of Object.entries(cluster ? CLUSTER_HOLDER_SCRIPTS : ORDERED_HOLDER_SCRIPTS)) {
    holderScripts[name] = { numberOfKeys: fenceKeys, lua }
  }
  const claims = client as unknown as ClaimCommands
  const commands = allowOomCommands<HolderCommands>(client, holderScripts)

  const deadline = connectionDeadline(client, { timeoutMs: commandTimeoutMs, caller: 'redisStore' })
  const { call } = deadline
  const heldKeys = heldKeyList(client, keyPrefix, deadline)
  /** The fences of this process's ordered claims, by claim token, from the claim to its complete or release. */
  const fences = new Map<string, Fence>()

  const releaseEvent = async (key: string, token: string) =>
    (await call(() => commands.payhooksRelease(key, token), 'release got no reply from Redis')) === 1
  const completeEvent = async (key: string, token: string) =>
    (await call(() => commands.payhooksComplete(key, token, retentionMs), 'complete got no reply from Redis')) === 1
  const leaveFence = (fence: Fence, token: string, applied: boolean) =>
    call(
      () => commands.payhooksFenceLeave(...fence.keys, token, ...leaveArgs(fence, applied, retentionMs)),
      'fence release got no reply from Redis',
    )

  /** The event's own claim: 'claimed', or the done marker's value, or a live claim's lease left and digest. */
  const claimEvent = (key: string, token: string, lease: number) => {
    let abandoned = false
    return call(
      () =>
        client
          .set(key, token, 'PX', lease, 'NX')
          // After giving up (the caller has its error already) nothing more is sent.
          .then((set) => (set === 'OK' ? 'claimed' : abandoned ? NEVER_READ : claims.payhooksClaim(key, token, lease))),
      'claim got no reply from Redis',
      // A command may still run once Redis answers again: drop the lease it would leave behind (sent after
      // it on the same connection), and send no second command once given up.
      () => {
        abandoned = true
        commands.payhooksRelease(key, token).catch(noop)
      },
    )
  }

  /** An ordered claim: on standalone Redis one script; on a Cluster the event's claim, then its fence's. */
  async function claimOrdered(key: string, token: string, lease: number, fence: Fence): Promise<ClaimResult> {
    const take = takeArgs(fence, lease, retentionMs)
    let reply: TakeReply
    if (!cluster) {
      const answer = await call(
        () => claims.payhooksOrderedClaim(key, ...fence.keys, token, ...take),
        'claim got no reply from Redis',
        () => {
          commands
            .payhooksOrderedRelease(key, ...fence.keys, token, ...leaveArgs(fence, false, retentionMs))
            .catch(noop)
        },
      )
      if (!isTake(answer)) return eventState(answer)
      reply = answer
    } else {
      const state = await claimEvent(key, token, lease)
      if (state !== 'claimed') return eventState(state)
      try {
        reply = await call(
          () => claims.payhooksFenceTake(...fence.keys, token, ...take),
          'fence got no reply from Redis',
          () => {
            leaveFence(fence, token, false).catch(noop)
          },
        )
      } catch (error) {
        await releaseEvent(key, token).catch(noop)
        throw error
      }
      if (reply[0] === 'b') await releaseEvent(key, token)
    }
    const entry = fenceEntry(reply)
    if ('busyForMs' in entry) {
      const busy: ClaimResult = { status: 'processing' }
      if (entry.busyForMs !== undefined) busy.retryAfterMs = entry.busyForMs
      if (entry.heldSince !== undefined) busy.keyHeldSince = entry.heldSince
      return busy
    }
    fences.set(token, fence)
    const { newest, fencingToken } = entry
    return newest === undefined
      ? { status: 'claimed', token, fencingToken }
      : { status: 'claimed', token, newest, fencingToken }
  }

  return {
    retentionMs,
    ordering: true,
    async claim(eventId, leaseMs, digest, position): Promise<ClaimResult> {
      const lease = Math.ceil(checkLeaseMs(leaseMs))
      const key = keyPrefix + eventId
      const token = digest === undefined ? newToken() : `${newToken()}:${digest}`
      if (position !== undefined) return claimOrdered(key, token, lease, fenceOf(keyPrefix, eventId, position))
      const state = await claimEvent(key, token, lease)
      return state === 'claimed' ? { status: 'claimed', token } : eventState(state)
    },
    async extend(eventId, token, leaseMs) {
      const lease = Math.ceil(checkLeaseMs(leaseMs))
      const key = keyPrefix + eventId
      const fence = fences.get(token)
      if (fence !== undefined && !cluster) {
        const args = [lease, fence.position.key] as const
        return (
          (await call(
            () => commands.payhooksOrderedExtend(key, ...fence.keys, token, ...args),
            'extend got no reply from Redis',
          )) === 1
        )
      }
      if (fence !== undefined) {
        await call(
          () => commands.payhooksFenceRenew(...fence.keys, token, lease, fence.position.key),
          'fence extend got no reply from Redis',
        )
      }
      return (await call(() => commands.payhooksExtend(key, token, lease), 'extend got no reply from Redis')) === 1
    },
    async complete(eventId, token) {
      const key = keyPrefix + eventId
      const fence = fences.get(token)
      if (fence === undefined) return completeEvent(key, token)
      // Kept until it succeeds, so a retried complete still moves the mark and frees the key.
      let done: boolean
      if (!cluster) {
        const args = leaveArgs(fence, true, retentionMs)
        done =
          (await call(
            () => commands.payhooksOrderedComplete(key, ...fence.keys, token, ...args),
            'complete got no reply from Redis',
          )) === 1
      } else {
        // The mark moves before the done marker: see fences.ts.
        await leaveFence(fence, token, true)
        done = await completeEvent(key, token)
      }
      fences.delete(token)
      return done
    },
    async release(eventId, token) {
      const key = keyPrefix + eventId
      const fence = fences.get(token)
      if (fence === undefined) return releaseEvent(key, token)
      fences.delete(token)
      if (!cluster) {
        const args = leaveArgs(fence, false, retentionMs)
        return (
          (await call(
            () => commands.payhooksOrderedRelease(key, ...fence.keys, token, ...args),
            'release got no reply from Redis',
          )) === 1
        )
      }
      await leaveFence(fence, token, false)
      return releaseEvent(key, token)
    },
    heldKeys: ({ limit }) => heldKeys(limit),
    health: () => redisHealth(client, deadline, 'redis', 'the dedupe store'),
  }
}

const isTake = (reply: unknown): reply is TakeReply => Array.isArray(reply) && (reply[0] === 't' || reply[0] === 'b')

/** A claim that found the event's key: done (with the digest kept, if any), or in progress. */
function eventState(reply: string | [number, string | null]): ClaimResult {
  if (typeof reply !== 'string') return processing(reply)
  return reply.length > DONE.length ? { status: 'done', digest: reply.slice(DONE.length + 1) } : { status: 'done' }
}
