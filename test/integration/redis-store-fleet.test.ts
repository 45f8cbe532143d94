import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { type SignedDelivery, sampleEvent, sampleEventTypes, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it } from 'vitest'

// Several receiver processes on one Redis, each event delivered three times at once to random
// instances, anything not answered 2XX redelivered as the service would: every event must be
// handled exactly once and none lost.
const INSTANCES = 4
const EVENTS = 2000
const COPIES = 3
const CONCURRENCY = 48
const MAX_ATTEMPTS = 400

const fixture = join(import.meta.dirname, '../fixtures/redis-receiver.mjs')
const secret = 'whsec_fleet_test'
const keyPrefix = `payhooks-test:${randomUUID()}:`
const countsKey = `${keyPrefix}handled`
const children: ChildProcess[] = []
let redis: Redis | undefined
const ports: number[] = []

async function startInstance(): Promise<number> {
  const child = spawn(process.execPath, [fixture], {
    env: { ...process.env, SECRET: secret, KEY_PREFIX: keyPrefix, COUNTS_KEY: countsKey },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  const lines = createInterface({ input: child.stdout! })
  const timer = setTimeout(() => child.kill(), 20_000)
  try {
    for await (const line of lines) return (JSON.parse(line) as { port: number }).port
  } finally {
    clearTimeout(timer)
  }
  throw new Error(`receiver fixture exited (${child.exitCode ?? child.signalCode}) before listening`)
}

beforeAll(async () => {
  if (!process.env.REDIS_URL) {
    throw new Error(
      'REDIS_URL is not set: run the Redis tests through `pnpm test` (node scripts/test.mjs), which starts redis-server',
    )
  }
  redis = new Redis(process.env.REDIS_URL)
  ports.push(...(await Promise.all(Array.from({ length: INSTANCES }, startInstance))))
}, 120_000)

afterAll(async () => {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = once(child, 'exit')
      child.kill('SIGTERM')
      await exited
    }),
  )
  redis?.disconnect()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

it(`${INSTANCES} receiver processes handle ${EVENTS} events delivered ${COPIES}x concurrently exactly once`, async () => {
  const events = await Promise.all(
    Array.from({ length: EVENTS }, (_, i) =>
      signedDelivery(
        sampleEvent(sampleEventTypes[i % sampleEventTypes.length]!, { eventId: `evt_fleet_${i}` }),
        secret,
      ),
    ),
  )
  // The copies of an event sit next to each other, so they are in flight at the same time.
  const jobs: SignedDelivery[] = events.flatMap((delivery) => Array.from({ length: COPIES }, () => delivery))
  const acknowledged: { status: string; instance: string }[] = []
  const refusals = new Map<number, number>()

  async function deliverUntilAcknowledged({ body, headers }: SignedDelivery): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const port = ports[Math.floor(Math.random() * ports.length)]
      const response = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', body, headers })
      const text = await response.text()
      if (response.ok) {
        const answer = JSON.parse(text) as { status: string }
        acknowledged.push({ status: answer.status, instance: response.headers.get('x-instance') ?? '' })
        return
      }
      refusals.set(response.status, (refusals.get(response.status) ?? 0) + 1)
      await sleep(5 + Math.random() * 20)
    }
    throw new Error(`delivery not acknowledged after ${MAX_ATTEMPTS} attempts: ${body.slice(0, 80)}`)
  }

  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < jobs.length) await deliverUntilAcknowledged(jobs[next++]!)
    }),
  )

  const counts = await redis!.hgetall(countsKey)
  expect(Object.keys(counts)).toHaveLength(EVENTS)
  const notOnce = Object.entries(counts).filter(([, count]) => count !== '1')
  expect(notOnce).toEqual([])
  for (let i = 0; i < EVENTS; i++) expect(counts[`evt_fleet_${i}`]).toBe('1')

  expect(acknowledged).toHaveLength(EVENTS * COPIES)
  const processed = acknowledged.filter((answer) => answer.status === 'processed')
  expect(processed).toHaveLength(EVENTS)
  expect(acknowledged.filter((answer) => answer.status === 'duplicate')).toHaveLength(EVENTS * (COPIES - 1))
  // Every instance took part in handling, so the dedupe really spanned processes.
  expect(new Set(processed.map((answer) => answer.instance)).size).toBe(INSTANCES)
  // Refusals are only "another delivery holds the claim" (409) or a transient 503, never a failure.
  expect([...refusals.keys()].filter((status) => status !== 409 && status !== 503)).toEqual([])
  console.log(
    `fleet: ${acknowledged.length} deliveries acknowledged, refusals before acknowledgement: ${JSON.stringify(Object.fromEntries(refusals))}`,
  )
}, 120_000)
