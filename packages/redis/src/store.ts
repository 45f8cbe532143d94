import { randomBytes } from 'node:crypto'
import { type ClaimResult, DEFAULT_RETENTION_MS, type WebhookStore } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /**
   * Prepended to every event id to form its key (after the client's own `keyPrefix`, if any). Give
   * each receiver fleet its own prefix; the store owns every key under it.
   * @default 'payhooks:'
   */
  keyPrefix?: string
  /**
   * How long a done marker is kept. At least the service's 72-hour retry window, so every retry of
   * a handled event is recognised.
   * @default 262_800_000 (73 hours)
   */
  retentionMs?: number
  /**
   * Longest a store call waits, for the connection to be ready plus the reply, before it rejects (so
   * the receiver answers 503 well within its deadline). Commands are never left in the client's
   * offline queue: while the connection is down, calls wait for it up to this long and then reject
   * without having sent anything.
   * @default 1000
   */
  commandTimeoutMs?: number
}

const RETRY_WINDOW_MS = 72 * 60 * 60 * 1000
/** Value of a handled event's key. Owner tokens always contain a '.', so they never equal it. */
const DONE = 'done'

// One key per event and one key per script: cluster-safe without hash tags.
const CLAIM_SCRIPT = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end
if redis.call('GET', KEYS[1]) == '${DONE}' then return 'done' end
return redis.call('PTTL', KEYS[1])`

const COMPLETE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], '${DONE}', 'PX', ARGV[2])
  return 1
end
return 0`

const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`

interface StoreCommands {
  payhooksClaim(key: string, token: string, leaseMs: number): Promise<'claimed' | 'done' | number>
  payhooksComplete(key: string, token: string, retentionMs: number): Promise<number>
  payhooksRelease(key: string, token: string): Promise<number>
}

/** Unique per process (72 random bits) and per claim, without a random draw on the hot path. */
const tokenPrefix = randomBytes(9).toString('base64url')
let tokenCounter = 0
const newToken = () => `${tokenPrefix}.${(++tokenCounter).toString(36)}`
const noop = () => {}

interface Call {
  deadline: number
  settled: boolean
  go(): void
  expire(): void
}

/**
 * Dedupe store on Redis for receivers running as many processes: a claim is one atomic script on
 * one key, `complete` and `release` only succeed for the claim's owner, and a crashed owner's claim
 * expires with its lease. Takes any `ioredis` client (standalone, Sentinel or Cluster) and never
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
export function redisStore(client: Redis | Cluster, options: RedisStoreOptions = {}): WebhookStore {
  const keyPrefix = options.keyPrefix ?? 'payhooks:'
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const timeoutMs = options.commandTimeoutMs ?? 1000
  if (typeof keyPrefix !== 'string') throw new TypeError('redisStore: keyPrefix must be a string')
  if (!(retentionMs >= RETRY_WINDOW_MS && Number.isSafeInteger(retentionMs))) {
    throw new RangeError('redisStore: retentionMs must be a whole number covering the 72-hour retry window')
  }
  if (!(timeoutMs > 0 && Number.isFinite(timeoutMs))) {
    throw new RangeError('redisStore: commandTimeoutMs must be a positive number')
  }

  client.defineCommand('payhooksClaim', { numberOfKeys: 1, lua: CLAIM_SCRIPT })
  client.defineCommand('payhooksComplete', { numberOfKeys: 1, lua: COMPLETE_SCRIPT })
  client.defineCommand('payhooksRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT })
  const commands = client as unknown as StoreCommands

  // Calls made while the connection is down wait here for 'ready' instead of in the offline queue,
  // where a claim could outlive its caller and be applied long after the receiver answered 503.
  const waiting = new Set<() => void>()
  const onReady = () => {
    client.off('ready', onReady)
    const callbacks = [...waiting]
    waiting.clear()
    for (const callback of callbacks) callback()
  }
  const waitReady = (callback: () => void) => {
    if (waiting.size === 0) client.on('ready', onReady)
    waiting.add(callback)
    if (client.status === 'wait') client.connect().catch(noop)
  }
  const stopWaiting = (callback: () => void) => {
    if (waiting.delete(callback) && waiting.size === 0) client.off('ready', onReady)
  }

  // One timer for all calls instead of one per call: with a single timeout, deadlines come in the
  // order calls start, so the oldest unsettled call is the next to expire.
  const calls: Call[] = []
  let oldest = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const dropSettled = () => {
    while (oldest < calls.length && calls[oldest]!.settled) oldest++
    if (oldest === calls.length) {
      calls.length = 0
      oldest = 0
    } else if (oldest >= 1024 && oldest * 2 >= calls.length) {
      calls.splice(0, oldest)
      oldest = 0
    }
  }
  const expire = () => {
    timer = undefined
    const now = performance.now()
    for (let next = calls[oldest]; next && next.deadline <= now; next = calls[oldest]) {
      if (!next.settled) next.expire()
      oldest++
    }
    dropSettled()
    if (oldest < calls.length) arm(calls[oldest]!.deadline - now)
  }
  const arm = (delay: number) => {
    timer = setTimeout(expire, delay)
    timer.unref?.()
  }

  /** Sends when the connection is ready and settles within `timeoutMs`; `abandon` runs if a sent call times out. */
  function call<T>(operation: string, send: () => Promise<T>, abandon?: () => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let sent = false
      const entry: Call = {
        deadline: performance.now() + timeoutMs,
        settled: false,
        go() {
          if (entry.settled) return
          sent = true
          send().then(
            (value) => {
              if (settle()) resolve(value)
            },
            (error: unknown) => {
              if (settle()) reject(error)
            },
          )
        },
        expire() {
          entry.settled = true
          if (sent) {
            reject(new Error(`redisStore: ${operation} got no reply from Redis within ${timeoutMs} ms`))
            abandon?.()
          } else {
            stopWaiting(entry.go)
            reject(new Error(`redisStore: Redis connection not ready within ${timeoutMs} ms (${client.status})`))
          }
        },
      }
      const settle = () => {
        if (entry.settled) return false
        entry.settled = true
        if (calls[oldest] === entry) dropSettled()
        return true
      }
      calls.push(entry)
      if (!timer) arm(timeoutMs)
      // 'end' means the client gave up reconnecting: sending rejects at once with ioredis' own error.
      if (client.status === 'ready' || client.status === 'end') entry.go()
      else waitReady(entry.go)
    })
  }

  return {
    async claim(eventId, leaseMs): Promise<ClaimResult> {
      if (!(leaseMs > 0 && Number.isFinite(leaseMs))) throw new RangeError('redisStore: leaseMs must be positive')
      const key = keyPrefix + eventId
      const token = newToken()
      const reply = await call(
        'claim',
        () => commands.payhooksClaim(key, token, Math.ceil(leaseMs)),
        // The script may still run once Redis answers again: drop the lease it would leave behind.
        () => commands.payhooksRelease(key, token).catch(noop),
      )
      if (reply === 'claimed') return { status: 'claimed', token }
      if (reply === 'done') return { status: 'done' }
      return reply >= 0 ? { status: 'processing', retryAfterMs: reply } : { status: 'processing' }
    },
    async complete(eventId, token) {
      const key = keyPrefix + eventId
      return (await call('complete', () => commands.payhooksComplete(key, token, retentionMs))) === 1
    },
    async release(eventId, token) {
      const key = keyPrefix + eventId
      return (await call('release', () => commands.payhooksRelease(key, token))) === 1
    },
  }
}
