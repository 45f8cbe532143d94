// A full Redis is not ready: redisStore's health() reports used_memory against maxmemory (a warning from 80%, an
// error from 95% or after an OOM refusal), so /ready turns 503 while Redis refuses claims; and the done marker of
// an event claimed before Redis filled is written all the same (allow-oom), so a copy is a duplicate. On a
// redis-server of its own, under maxmemory with noeviction. Mid-traffic, and on a Cluster: redis-full.test.ts.
import { createWebhooks, type HealthReport, type LogFields } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'

const SECRET = 'whsec_redis_memory'
let server: OwnRedis
let client: Redis
let filler: Redis

beforeAll(async () => {
  server = await ownRedis({ args: ['--maxmemory-policy', 'noeviction'] })
  await server.start()
  client = new Redis(server.url)
  filler = new Redis(server.url)
})
afterAll(async () => {
  client?.disconnect()
  filler?.disconnect()
  await server?.dispose()
})

const memoryCheck = (report: HealthReport) => report.checks.find((check) => check.name === 'redis_memory')
const usedMemory = async () => Number(/^used_memory:(\d+)/m.exec(await filler.info('memory'))?.[1])

/** Sets maxmemory so that what Redis uses now is `share` of it. */
async function limitTo(share: number) {
  await filler.config('SET', 'maxmemory', String(Math.floor((await usedMemory()) / share)))
}

/** Fills Redis up: maxmemory below what it uses, so every write is refused for lack of memory (OOM). */
async function fillUp() {
  await filler.config('SET', 'maxmemory', String(Math.floor((await usedMemory()) / 2)))
  await expect(filler.set('filler:probe', 'x')).rejects.toThrow(/OOM command not allowed/)
}

async function makeRoom() {
  await filler.config('SET', 'maxmemory', '0')
  const keys = await filler.keys('filler:*')
  if (keys.length > 0) await filler.del(...keys)
}

function receiver() {
  const lines: { level: string; fields: LogFields; message: string }[] = []
  const record = (level: string) => (fields: LogFields, message?: string) =>
    void lines.push({ level, fields, message: String(message) })
  const webhooks = createWebhooks({
    secret: SECRET,
    store: redisStore(client, { keyPrefix: `memory:${Math.random()}:` }),
    logger: { error: record('error'), warn: record('warn'), info: record('info') },
    checkAtStart: false,
  })
  const deliver = async (eventId: string) => {
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId }), SECRET)
    return webhooks.receive({ body, getHeader: (name) => headers[name as never] })
  }
  return { webhooks, deliver, lines }
}

describe('redisStore under maxmemory with noeviction', () => {
  it('health() reports memory against maxmemory: none set, a warning from 80%, an error from 95%', async () => {
    const { webhooks } = receiver()
    await filler.config('SET', 'maxmemory', '0')
    const unlimited = await webhooks.health({ maxAgeMs: 0 })
    expect(memoryCheck(unlimited)).toMatchObject({ ok: true })
    expect(memoryCheck(unlimited)?.detail).toMatch(/^[\d.]+ MB used, no maxmemory set$/)

    await limitTo(0.87)
    const high = await webhooks.health({ maxAgeMs: 0 })
    expect(high.ready).toBe(true)
    expect(memoryCheck(high)).toMatchObject({ ok: false, severity: 'warning' })
    expect(memoryCheck(high)?.detail).toMatch(/used of maxmemory [\d.]+ MB \(8\d%\)$/)

    await limitTo(0.985)
    const full = await webhooks.health({ maxAgeMs: 0 })
    expect(full.ready).toBe(false)
    expect(memoryCheck(full)).toMatchObject({ ok: false, severity: 'error' })
    expect(memoryCheck(full)?.detail).toMatch(/\(9\d%\): Redis is about to refuse claims \(OOM\)$/)
    await makeRoom()
    expect((await webhooks.health({ maxAgeMs: 0 })).ready).toBe(true)
  })

  it('an OOM refusal of a claim turns health() not ready for the next seconds, whatever the share', async () => {
    const { webhooks, deliver } = receiver()
    await fillUp()
    const refused = await deliver('evt_oom_claim')
    expect(refused.status).toBe(503)
    expect(JSON.parse(refused.body).error).toBe('store_unavailable')
    // Room again for INFO, but the refusal is seconds old: still not ready.
    await filler.config('SET', 'maxmemory', '0')
    const report = await webhooks.health({ maxAgeMs: 0 })
    expect(report.ready).toBe(false)
    expect(memoryCheck(report)).toMatchObject({ ok: false, severity: 'error' })
    expect(memoryCheck(report)?.detail).toMatch(/^Redis refused a write for lack of memory \(OOM\) \d+ s ago/)
    await makeRoom()
  })

  it('a done marker due once Redis is full is written all the same: 200 processed, and a copy is a duplicate', async () => {
    const { webhooks, deliver, lines } = receiver()
    let runs = 0
    webhooks.on('transaction_settled', async () => {
      runs++
      await fillUp() // Redis fills up while the handler runs: the claim was taken, the done marker comes after.
    })
    const answer = await deliver('evt_oom_done')
    expect(answer.status).toBe(200)
    expect(JSON.parse(answer.body)).toMatchObject({ status: 'processed' })
    expect(lines.filter((line) => line.fields.operation === 'complete')).toEqual([])
    // Still full: the claim's script finds the done marker before writing anything, so the copy is a duplicate.
    const copy = await deliver('evt_oom_done')
    expect(copy.status).toBe(200)
    expect(JSON.parse(copy.body)).toMatchObject({ status: 'duplicate' })
    // A new event's claim, a write, is refused (503, retried), and runs nothing.
    expect((await deliver('evt_oom_new')).status).toBe(503)
    await makeRoom()
    const again = await deliver('evt_oom_done')
    expect(JSON.parse(again.body)).toMatchObject({ status: 'duplicate' })
    expect(runs).toBe(1)
  })
})
