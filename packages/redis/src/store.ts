import { randomBytes } from 'node:crypto'
import type { ClaimResult, WebhookStore } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { connectionDeadline } from './connection.js'
import { redisFences } from './fences.js'
import { redisHealth } from './health.js'
import type { RedisStoreOptions } from './types.js'
import { leaseMs as checkLeaseMs, storeOptions } from './validations.js'

/**
 * Value of a handled event's key, followed by `:` and the body digest when its claim had one (`done:3f…`).
 * Owner tokens always contain a '.' before any ':', so they never start with it.
 */
const DONE = 'done'

// One key per event and one key per script: cluster-safe without hash tags. A claim first sends a plain
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

const COMPLETE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], '${DONE}' .. (string.match(ARGV[1], ':.*$') or ''), 'PX', ARGV[2])
  return 1
end
return 0`

const EXTEND_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`

const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

interface StoreCommands {
  payhooksClaim(key: string, token: string, leaseMs: number): Promise<string | [number, string | null]>
  payhooksExtend(key: string, token: string, leaseMs: number): Promise<number>
  payhooksComplete(key: string, token: string, retentionMs: number): Promise<number>
  payhooksRelease(key: string, token: string): Promise<number>
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
 * answers 503; the client's own reconnection brings the store back.
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

  client.defineCommand('payhooksClaim', { numberOfKeys: 1, lua: CLAIM_SCRIPT })
  client.defineCommand('payhooksExtend', { numberOfKeys: 1, lua: EXTEND_SCRIPT })
  client.defineCommand('payhooksComplete', { numberOfKeys: 1, lua: COMPLETE_SCRIPT })
  client.defineCommand('payhooksRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT })
  const commands = client as unknown as StoreCommands

  const deadline = connectionDeadline(client, { timeoutMs: commandTimeoutMs, caller: 'redisStore' })
  const { call } = deadline
  const fences = redisFences(client, keyPrefix, retentionMs, deadline)
  const release = async (eventId: string, token: string) => {
    await fences.leave(token, false)
    const key = keyPrefix + eventId
    return (await call(() => commands.payhooksRelease(key, token), 'release got no reply from Redis')) === 1
  }

  return {
    retentionMs,
    ordering: true,
    async claim(eventId, leaseMs, digest, position): Promise<ClaimResult> {
      const lease = Math.ceil(checkLeaseMs(leaseMs))
      const key = keyPrefix + eventId
      const token = digest === undefined ? newToken() : `${newToken()}:${digest}`
      let abandoned = false
      const reply = await call(
        () =>
          client
            .set(key, token, 'PX', lease, 'NX')
            // After giving up (the caller has its error already) nothing more is sent.
            .then((set) =>
              set === 'OK' ? 'claimed' : abandoned ? NEVER_READ : commands.payhooksClaim(key, token, lease),
            ),
        'claim got no reply from Redis',
        // A command may still run once Redis answers again: drop the lease it would leave behind (sent after
        // it on the same connection), and send no second command once given up.
        () => {
          abandoned = true
          commands.payhooksRelease(key, token).catch(noop)
        },
      )
      if (reply === 'claimed') {
        if (position === undefined) return { status: 'claimed', token }
        // Ordering fences (issue 24): hold the event's ordering key too, or give the claim back.
        let entry: Awaited<ReturnType<typeof fences.enter>>
        try {
          entry = await fences.enter(eventId, token, position, lease)
        } catch (error) {
          await release(eventId, token).catch(noop)
          throw error
        }
        if ('busyForMs' in entry) {
          await release(eventId, token)
          const busy: ClaimResult = { status: 'processing' }
          if (entry.busyForMs !== undefined) busy.retryAfterMs = entry.busyForMs
          if (entry.heldSince !== undefined) busy.keyHeldSince = entry.heldSince
          return busy
        }
        const { newest, fencingToken } = entry
        return newest === undefined
          ? { status: 'claimed', token, fencingToken }
          : { status: 'claimed', token, newest, fencingToken }
      }
      if (typeof reply === 'string') {
        return reply.length > DONE.length
          ? { status: 'done', digest: reply.slice(DONE.length + 1) }
          : { status: 'done' }
      }
      return processing(reply)
    },
    async extend(eventId, token, leaseMs) {
      const lease = Math.ceil(checkLeaseMs(leaseMs))
      const key = keyPrefix + eventId
      await fences.extend(token, lease)
      return (await call(() => commands.payhooksExtend(key, token, lease), 'extend got no reply from Redis')) === 1
    },
    async complete(eventId, token) {
      // The mark moves before the done marker: see fences.ts.
      await fences.leave(token, true)
      const key = keyPrefix + eventId
      return (
        (await call(() => commands.payhooksComplete(key, token, retentionMs), 'complete got no reply from Redis')) === 1
      )
    },
    release,
    heldKeys: ({ limit }) => fences.heldKeys(limit),
    health: () => redisHealth(client, deadline, 'redis', 'the dedupe store'),
  }
}
