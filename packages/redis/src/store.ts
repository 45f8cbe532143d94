import { randomBytes } from 'node:crypto'
import type { ClaimResult, WebhookStore } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { allowOomCommands, type ScriptDefinition } from './allow-oom.js'
import { type BatchClaim, type ClaimReply, eventClaims, topHash } from './claim.js'
import { connectionDeadline } from './connection.js'
import { FENCE_KEYS, type Fence, fenceArgs, fenceEntry, fenceOf, TAKE_ARGS, type TakeReply } from './fences.js'
import { functionCommands } from './functions.js'
import { redisHealth } from './health.js'
import { heldKeyList } from './held-keys.js'
import { markerLayout, markerValue } from './layout.js'
import {
  CLAIM_SCRIPT,
  CLUSTER_CLAIM_SCRIPTS,
  CLUSTER_HOLDER_SCRIPTS,
  EVENT_HOLDER_SCRIPTS,
  EVENT_KEYS,
  FAST_COMPLETE_SCRIPT,
  HOLD_SCRIPTS,
  ORDERED_CLAIM_SCRIPT,
  ORDERED_HOLDER_SCRIPTS,
  ORDERED_KEYS,
  STORE_LIBRARY,
} from './store-scripts.js'
import type { RedisStoreOptions } from './types.js'
import { rollout } from './upgrade.js'
import { leaseMs as checkLeaseMs, storeOptions } from './validations.js'

type Arg = string | number | Buffer

/** The claims' scripts: refused by a full Redis, as the claim's `SET NX` is. */
interface ClaimCommands {
  payhooksClaim(...args: Arg[]): Promise<ClaimReply>
  payhooksOrderedClaim(...args: Arg[]): Promise<Exclude<ClaimReply, number> | TakeReply>
  payhooksFenceTake(...args: Arg[]): Promise<TakeReply>
}

/** The steps of a claim taken: run by a full Redis too (allow-oom.ts). */
interface HolderCommands {
  payhooksExtend(key: string, token: string, leaseMs: number): Promise<number>
  payhooksComplete(...args: Arg[]): Promise<number>
  payhooksCompleteFast(...args: Arg[]): Promise<number>
  payhooksRelease(key: string, token: string): Promise<number>
  payhooksOrderedComplete(...args: Arg[]): Promise<number>
  payhooksOrderedRelease(...args: Arg[]): Promise<number>
  payhooksOrderedExtend(...args: Arg[]): Promise<number>
  payhooksFenceLeave(...args: Arg[]): Promise<number>
  payhooksFenceRenew(...args: Arg[]): Promise<number>
}

/** Unique per process (72 random bits) and per claim, without a random draw on the hot path. */
const tokenPrefix = randomBytes(9).toString('base64url')
let tokenCounter = 0
const newToken = () => `${tokenPrefix}.${(++tokenCounter).toString(36)}`
const noop = () => {}

/** The claim script's answer for a live claim: its remaining lease (negative when unknown) and digest. */
function processing([ttl, digest]: [number, string | null]): ClaimResult {
  const result: ClaimResult = ttl >= 0 ? { status: 'processing', retryAfterMs: ttl } : { status: 'processing' }
  if (digest !== null) result.digest = digest
  return result
}

/**
 * Dedupe store on Redis for receivers running as many processes: a claim takes the event's own key with `SET NX PX`
 * and reads its done marker in the same round trip (claim.ts); `extend`, `complete` and `release` only
 * succeed for the claim's owner, and a crashed owner's claim expires with its lease. A handled event is kept as a
 * 24-byte record of a small shared string (about 41 bytes of Redis memory), not a key of its own (layout.ts).
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
  const { keyPrefix, retentionMs, commandTimeoutMs, rolloutMs } = storeOptions(options)
  // The tests' own option: a generation's first bucket count, small to make the hashes grow within a few thousand events.
  const { minBuckets } = options as { minBuckets?: number }

  // On a Cluster an event's keys and its fence's are in different slots, which no script may span.
  const cluster = (client as { isCluster?: boolean }).isCluster === true
  const layout = markerLayout(client, keyPrefix, retentionMs, minBuckets)
  client.defineCommand('payhooksClaim', { numberOfKeys: EVENT_KEYS, lua: CLAIM_SCRIPT })
  if (cluster)
    client.defineCommand('payhooksFenceTake', {
      numberOfKeys: FENCE_KEYS,
      lua: CLUSTER_CLAIM_SCRIPTS.payhooksFenceTake,
    })
  else client.defineCommand('payhooksOrderedClaim', { numberOfKeys: ORDERED_KEYS, lua: ORDERED_CLAIM_SCRIPT })
  const holderScripts: Record<string, ScriptDefinition> = {
    payhooksComplete: { numberOfKeys: EVENT_KEYS, lua: EVENT_HOLDER_SCRIPTS.payhooksComplete },
    payhooksCompleteFast: { numberOfKeys: 2, lua: FAST_COMPLETE_SCRIPT },
    payhooksExtend: { numberOfKeys: 1, lua: HOLD_SCRIPTS.payhooksExtend },
    payhooksRelease: { numberOfKeys: 1, lua: HOLD_SCRIPTS.payhooksRelease },
  }
  const [fenceScripts, fenceKeys] = cluster
    ? [CLUSTER_HOLDER_SCRIPTS, FENCE_KEYS]
    : [ORDERED_HOLDER_SCRIPTS, ORDERED_KEYS]
  for (const [name, lua] of Object.entries(fenceScripts)) holderScripts[name] = { numberOfKeys: fenceKeys, lua }
  const defined = client as unknown as ClaimCommands
  const scripts = allowOomCommands<HolderCommands>(client, holderScripts)
  const steps = functionCommands<HolderCommands & ClaimCommands>(client, STORE_LIBRARY, {
    ...(scripts as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>),
    payhooksOrderedClaim: (...args) => defined.payhooksOrderedClaim(...(args as Arg[])),
    payhooksFenceTake: (...args) => defined.payhooksFenceTake(...(args as Arg[])),
  })
  const commands: HolderCommands = steps
  const claims: ClaimCommands = { ...steps, payhooksClaim: (...args) => defined.payhooksClaim(...args) }

  const deadline = connectionDeadline(client, {
    timeoutMs: commandTimeoutMs,
    caller: 'redisStore',
    coalesceWrites: true,
  })
  const { call } = deadline
  const heldKeys = heldKeyList(client, keyPrefix, deadline)
  const upgrade = rollout(client, keyPrefix, rolloutMs, deadline)
  /** The fences of this process's ordered claims, by claim token, from the claim to its complete or release. */
  const fences = new Map<string, Fence>()
  /**
   * The generation and its count value each claim found (by claim token, until its complete or release), which the
   * complete passes back to skip reading the counts: only a hint (markerTarget in layout.ts), so forgotten at will.
   */
  const hints = new Map<string, { gen: number; v: number }>()
  const keepHint = (token: string, gen: number, v: number | undefined) => {
    if (v === undefined || v <= 0) return
    if (hints.size >= 100_000) hints.clear()
    hints.set(token, { gen, v })
  }
  /** The hint of a claim for generation `gen` (0: none). */
  const takeHint = (token: string, gen: number) => {
    const hint = hints.get(token)
    hints.delete(token)
    return hint?.gen === gen ? hint.v : 0
  }

  /** The event's keys (its own, then its markers' base), its marker's field, value, hash bits, minimum and place. */
  const markerArgs = (eventId: string, token: string) => {
    const place = layout.marker(eventId)
    const { field, base, h, min, none } = place
    return { keys: [keyPrefix + eventId, base], field, value: markerValue(token, none), h, min, place }
  }

  /** The value a marker kept without a digest has (layout.ts), as hex, for the rare answer that needs it. */
  const noneOf = (eventId: string) => () => layout.marker(eventId).none.toString('hex')

  const releaseEvent = async (key: string, token: string) =>
    (await call(() => commands.payhooksRelease(key, token), 'release got no reply from Redis')) === 1
  const completeEvent = async (eventId: string, token: string) => {
    const { keys, field, value, h, min } = markerArgs(eventId, token)
    const { gen, expireAt, countsAt } = layout.generation()
    const bridge = upgrade.bridgeMs()
    const hint = takeHint(token, gen)
    if (hint > 0 && bridge === 0) {
      const hash = topHash(keys[1] as string, h, gen, hint)
      const done = await call(
        () => commands.payhooksCompleteFast(keys[0] as string, hash, token, Buffer.concat([field, value]), expireAt),
        'complete got no reply from Redis',
      )
      return done === 1
    }
    return (
      (await call(
        () => commands.payhooksComplete(...keys, token, field, value, h, gen, expireAt, countsAt, min, bridge, hint),
        'complete got no reply from Redis',
      )) === 1
    )
  }
  const leaveFence = (fence: Fence, token: string, applied: boolean) =>
    call(
      () =>
        commands.payhooksFenceLeave(
          ...fence.keys,
          ...fenceArgs(fence, token, 0, applied, upgrade.bridgeMs(), layout.generation()),
        ),
      'fence release got no reply from Redis',
    )

  const { claimEvent: claimPipelined, withReads } = eventClaims({
    client,
    layout,
    keyPrefix,
    call,
    script: (...args) => claims.payhooksClaim(...args),
    release: (key, token) => commands.payhooksRelease(key, token),
  })
  /** The event's own claim: 'claimed', or its done marker, or a live claim's lease left and digest. */
  const claimEvent = async (eventId: string, token: string, lease: number) => {
    const { gen } = layout.generation()
    const reply = await claimPipelined(eventId, token, lease, gen)
    if (typeof reply !== 'number') return reply
    keepHint(token, gen, reply)
    return 'claimed'
  }

  /** An ordered claim: on standalone Redis one script; on a Cluster the event's claim, then its fence's. */
  async function claimOrdered(
    eventId: string,
    token: string,
    lease: number,
    fence: Fence,
    digest: string | undefined,
  ): Promise<ClaimResult> {
    let reply: TakeReply
    const generation = layout.generation()
    const take = fenceArgs(fence, token, lease, false, 0, generation)
    if (!cluster) {
      const { keys, field, place } = markerArgs(eventId, token)
      const giveBack = () => {
        commands.payhooksOrderedRelease(...keys, ...fence.keys, ...take).catch(noop)
      }
      // With Functions: the take, then the marker reads, in one write (claim.ts); else, or when the function was
      // refused (not loaded yet, a full Redis), the claim script reading the marker itself.
      const name = steps.fcallName('payhooksOrderedTake')
      const found: BatchClaim | undefined =
        name === undefined
          ? undefined
          : await withReads(
              place,
              generation.gen,
              ['fcall', name, ORDERED_KEYS, ...keys, ...fence.keys, ...take.slice(0, TAKE_ARGS)],
              isTake,
              giveBack,
            )
      if (found !== undefined && found.error === null) {
        if (found.marker !== undefined) {
          // A copy of a handled event: the key and fence it took go back (a fence found held took nothing).
          if (isTake(found.reply) && found.reply[0] === 't') {
            await call(
              () => commands.payhooksOrderedRelease(...keys, ...fence.keys, ...take),
              'release got no reply from Redis',
            ).catch(noop)
          }
          return eventState(['d', found.marker], digest, noneOf(eventId))
        }
        if (!isTake(found.reply)) return eventState(found.reply as Exclude<ClaimReply, number>, digest, noneOf(eventId))
        reply = found.reply
        if (reply[0] === 't') keepHint(token, generation.gen, found.count)
      } else {
        const answer = await call(
          () => claims.payhooksOrderedClaim(...keys, ...fence.keys, ...take.slice(0, TAKE_ARGS), field),
          'claim got no reply from Redis',
          giveBack,
        )
        if (!isTake(answer)) return eventState(answer, digest, noneOf(eventId))
        reply = answer
        if (answer[0] === 't') keepHint(token, generation.gen, answer[3])
      }
    } else {
      const state = await claimEvent(eventId, token, lease)
      if (state !== 'claimed') return eventState(state, digest, noneOf(eventId))
      try {
        reply = await call(
          () => claims.payhooksFenceTake(...fence.keys, ...take.slice(0, TAKE_ARGS)),
          'fence got no reply from Redis',
          () => {
            leaveFence(fence, token, false).catch(noop)
          },
        )
      } catch (error) {
        await releaseEvent(keyPrefix + eventId, token).catch(noop)
        throw error
      }
      if (reply[0] === 'b') await releaseEvent(keyPrefix + eventId, token)
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

  /** complete or release of an ordered claim on standalone Redis: one script. */
  const orderedStep = (eventId: string, token: string, fence: Fence, applied: boolean) => {
    const { keys, field, value, min } = markerArgs(eventId, token)
    const generation = layout.generation()
    const args = fenceArgs(fence, token, 0, applied, upgrade.bridgeMs(), generation)
    if (!applied) return commands.payhooksOrderedRelease(...keys, ...fence.keys, ...args)
    const hint = takeHint(token, generation.gen)
    return commands.payhooksOrderedComplete(
      ...keys,
      ...fence.keys,
      ...args,
      field,
      value,
      generation.countsAt,
      min,
      hint,
    )
  }

  return {
    retentionMs,
    ordering: true,
    init: () => Promise.all([upgrade.ready(), steps.ready()]).then(noop),
    async claim(eventId, leaseMs, digest, position): Promise<ClaimResult> {
      const lease = Math.ceil(checkLeaseMs(leaseMs))
      await upgrade.ready()
      const token = digest === undefined ? newToken() : `${newToken()}:${digest}`
      if (position !== undefined) {
        return claimOrdered(eventId, token, lease, fenceOf(layout, keyPrefix, eventId, position), digest)
      }
      const state = await claimEvent(eventId, token, lease)
      return state === 'claimed' ? { status: 'claimed', token } : eventState(state, digest, noneOf(eventId))
    },
    async extend(eventId, token, leaseMs) {
      const lease = Math.ceil(checkLeaseMs(leaseMs))
      const key = keyPrefix + eventId
      const fence = fences.get(token)
      if (fence !== undefined && !cluster) {
        const { keys } = markerArgs(eventId, token)
        const all = [...keys, ...fence.keys, ...fenceArgs(fence, token, lease, false, 0, layout.generation())]
        return (await call(() => commands.payhooksOrderedExtend(...all), 'extend got no reply from Redis')) === 1
      }
      if (fence !== undefined) {
        await call(
          () =>
            commands.payhooksFenceRenew(
              ...fence.keys,
              ...fenceArgs(fence, token, lease, false, 0, layout.generation()),
            ),
          'fence extend got no reply from Redis',
        )
      }
      return (await call(() => commands.payhooksExtend(key, token, lease), 'extend got no reply from Redis')) === 1
    },
    async complete(eventId, token) {
      const fence = fences.get(token)
      if (fence === undefined) return completeEvent(eventId, token)
      // Kept until it succeeds, so a retried complete still moves the mark and frees the key.
      let done: boolean
      if (!cluster) {
        done = (await call(() => orderedStep(eventId, token, fence, true), 'complete got no reply from Redis')) === 1
      } else {
        // The mark moves before the done marker: see fences.ts.
        await leaveFence(fence, token, true)
        done = await completeEvent(eventId, token)
      }
      fences.delete(token)
      return done
    },
    async release(eventId, token) {
      hints.delete(token)
      const fence = fences.get(token)
      if (fence === undefined) return releaseEvent(keyPrefix + eventId, token)
      fences.delete(token)
      if (!cluster) {
        return (await call(() => orderedStep(eventId, token, fence, false), 'release got no reply from Redis')) === 1
      }
      await leaveFence(fence, token, false)
      return releaseEvent(keyPrefix + eventId, token)
    },
    heldKeys: ({ limit }) => heldKeys(limit),
    health: () => redisHealth(client, deadline, 'redis', 'the dedupe store'),
  }
}

const isTake = (reply: unknown): reply is TakeReply => Array.isArray(reply) && (reply[0] === 't' || reply[0] === 'b')

/**
 * A claim that found the event handled or in progress. A layout-2 marker keeps 64 bits of the digest: when they are
 * the claim's own, the answer is the claim's digest (the same body), else those 16 hex characters (another body);
 * `none()` is the value of a marker kept without a digest.
 */
function eventState(reply: Exclude<ClaimReply, number>, digest: string | undefined, none: () => string): ClaimResult {
  if (typeof reply === 'string') {
    return reply.length > 4 ? { status: 'done', digest: reply.slice(5) } : { status: 'done' }
  }
  if (reply[0] === 'd') {
    const kept = reply[1] as string
    if (kept === none()) return { status: 'done' }
    return { status: 'done', digest: digest?.startsWith(kept) ? digest : kept }
  }
  return processing(reply as [number, string | null])
}
