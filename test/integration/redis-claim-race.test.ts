// The unordered claim is a pipeline (`SET NX`, then an `MGET` of the marker counts and the marker strings) rather than one
// script (issue 49): nothing keeps another instance's completion from running between its commands. These tests put
// one there, on a real Redis, through a loopback proxy that hands a claiming instance's commands to Redis one at a
// time and runs the other instance's completion in the gap chosen: whatever the gap, the copy must be answered done,
// never claimed (a claim is what makes a receiver run the handlers: a second run).
import { randomUUID } from 'node:crypto'
import { createConnection, createServer, type Server, type Socket } from 'node:net'
import type { WebhookStore } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error(
    'REDIS_URL is not set: run the Redis tests through `pnpm test` (node scripts/test.mjs), which starts redis-server',
  )
}
const upstream = new URL(REDIS_URL)
const LEASE = 60_000
const DIGEST = 'ab'.repeat(16)

/** The end of the complete RESP command (`*N`, then N bulk strings) at `pos` of `buffer`, or undefined. */
function commandEnd(buffer: Buffer, pos: number): number | undefined {
  const line = (at: number) => {
    const end = buffer.indexOf('\r\n', at)
    return end < 0 ? undefined : end
  }
  let end = line(pos)
  if (end === undefined) return undefined
  const count = Number(buffer.toString('latin1', pos + 1, end))
  let at = end + 2
  for (let i = 0; i < count; i++) {
    end = line(at)
    if (end === undefined) return undefined
    at = end + 2 + Number(buffer.toString('latin1', at + 1, end)) + 2
    if (at > buffer.length) return undefined
  }
  return at
}

/** The end of the complete RESP2 or RESP3 reply at `pos` of `buffer`, or undefined. */
function replyEnd(buffer: Buffer, pos: number): number | undefined {
  const end = buffer.indexOf('\r\n', pos)
  if (end < 0) return undefined
  const type = String.fromCharCode(buffer[pos] as number)
  const n = Number(buffer.toString('latin1', pos + 1, end))
  if ('$!='.includes(type)) {
    if (n < 0) return end + 2
    return end + 2 + n + 2 <= buffer.length ? end + 2 + n + 2 : undefined
  }
  if ('*~>%'.includes(type)) {
    let at: number | undefined = end + 2
    for (let i = 0; i < (type === '%' ? 2 * n : n) && at !== undefined; i++) at = replyEnd(buffer, at)
    return at
  }
  return end + 2
}

interface Gap {
  /** Commands of the claim to hand over before `run` (0: run before its first). */
  readonly at: number
  run(): Promise<void>
  ran?: boolean
}

/**
 * A proxy to the test's Redis that hands each command to it alone, in order, and, once armed with a gap, counts the
 * commands from then on and runs the gap's `run` before the gap's command, once every command handed over was answered.
 */
async function steppingProxy() {
  let gap: Gap | undefined
  let seen = 0
  const sockets: Socket[] = []
  const server: Server = createServer((client) => {
    const redis = createConnection({ host: upstream.hostname, port: Number(upstream.port) })
    sockets.push(client, redis)
    let sent = 0
    let answered = 0
    let replies = Buffer.alloc(0)
    let answeredAll: (() => void) | undefined
    redis.on('data', (chunk: Buffer) => {
      replies = Buffer.concat([replies, chunk])
      for (let end = replyEnd(replies, 0); end !== undefined; end = replyEnd(replies, 0)) {
        replies = replies.subarray(end)
        answered++
      }
      client.write(chunk)
      if (answered === sent) answeredAll?.()
    })
    let pending = Buffer.alloc(0)
    let queue = Promise.resolve()
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      const commands: Buffer[] = []
      for (let end = commandEnd(pending, 0); end !== undefined; end = commandEnd(pending, 0)) {
        commands.push(pending.subarray(0, end))
        pending = pending.subarray(end)
      }
      for (const command of commands) {
        queue = queue.then(async () => {
          const step = gap
          if (step && seen++ === step.at) {
            gap = undefined
            if (answered < sent) await new Promise<void>((resolve) => (answeredAll = resolve))
            answeredAll = undefined
            await step.run()
            step.ran = true
          }
          sent++
          redis.write(command)
        })
      }
    })
    const close = () => {
      client.destroy()
      redis.destroy()
    }
    client.on('close', close).on('error', close)
    redis.on('close', close).on('error', close)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return {
    port,
    arm(next: Gap) {
      seen = 0
      gap = next
    },
    close() {
      for (const socket of sockets) socket.destroy()
      server.close()
    },
  }
}

const proxies: Awaited<ReturnType<typeof steppingProxy>>[] = []
const clients: Redis[] = []
const connect = (port = Number(upstream.port)) => {
  const client = new Redis({ host: upstream.hostname, port })
  clients.push(client)
  return client
}
afterAll(() => {
  for (const client of clients) client.disconnect()
  for (const proxy of proxies) proxy.close()
})

async function claimed(store: WebhookStore, eventId: string) {
  const claim = await store.claim(eventId, LEASE, DIGEST)
  if (claim.status !== 'claimed') throw new Error(`${eventId} was ${claim.status}`)
  return claim.token
}

/** Two instances on one prefix: `first` on its own connection, `second` through a stepping proxy. */
async function fleet(options: Record<string, unknown> = {}) {
  const proxy = await steppingProxy()
  proxies.push(proxy)
  const keyPrefix = `claim-race:${randomUUID()}:`
  // The copy's claim waits in the proxy while the other instance completes: past the 1 s default commandTimeoutMs
  // on a loaded machine it would be given up on, which is not what these tests are about.
  const first = redisStore(connect(), { keyPrefix, ...UNHURRIED, ...options })
  const second = redisStore(connect(proxy.port), { keyPrefix, ...UNHURRIED, ...options })
  // Markers exist, and `second` has read their counts (its copy is current).
  await first.complete('evt_warm', await claimed(first, 'evt_warm'))
  await second.complete('evt_warm_2', await claimed(second, 'evt_warm_2'))
  await second.complete('evt_warm_3', await claimed(second, 'evt_warm_3'))
  return { proxy, keyPrefix, first, second }
}

describe('redisStore: a completion racing another instance’s pipelined claim (issue 49)', () => {
  // Commands 0 and 1 are the pipeline's; 2 is the claim script a refused SET NX with no marker found falls back to.
  it.each([0, 1, 2])(
    'a copy claimed while the event’s holder completes it, before the claim’s command %i, is answered done',
    async (at) => {
      const { proxy, keyPrefix, first, second } = await fleet()
      const eventId = `evt_race_${at}`
      const token = await claimed(first, eventId)
      const gap: Gap = {
        at,
        run: async () => {
          expect(await first.complete(eventId, token)).toBe(true)
        },
      }
      proxy.arm(gap)
      expect(await second.claim(eventId, LEASE, DIGEST)).toEqual({ status: 'done', digest: DIGEST })
      expect(gap.ran).toBe(true)
      // A claim the copy took (its SET NX came after the completion) was given back.
      expect(await connect().exists(`${keyPrefix}${eventId}`)).toBe(0)
      expect(await first.claim(eventId, LEASE, DIGEST)).toEqual({ status: 'done', digest: DIGEST })
    },
  )

  it('a copy is answered done when its instance’s copy of the marker counts is stale (another added a level)', async () => {
    // One bucket to start: the 149th marker adds a level of four, where the next markers go.
    const { keyPrefix, first, second } = await fleet({ minBuckets: 1 })
    const admin = connect()
    const counts = `${keyPrefix}{d}n`
    const before = await admin.getBuffer(counts)
    for (let i = 0; i < 149; i++) await first.complete(`evt_fill_${i}`, await claimed(first, `evt_fill_${i}`))
    expect((await admin.getBuffer(counts))?.equals(before as Buffer)).toBe(false)
    await first.complete('evt_late', await claimed(first, 'evt_late'))
    expect(await second.claim('evt_late', LEASE, DIGEST)).toEqual({ status: 'done', digest: DIGEST })
    expect(await admin.exists(`${keyPrefix}evt_late`)).toBe(0)
    // Its copy is current again: a new event is claimed, and handled once.
    const token = await claimed(second, 'evt_new')
    expect(await second.complete('evt_new', token)).toBe(true)
    expect(await first.claim('evt_new', LEASE, DIGEST)).toEqual({ status: 'done', digest: DIGEST })
  })
})
