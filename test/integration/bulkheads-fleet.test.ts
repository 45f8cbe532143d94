// Issue 47 item 2, "one poison event type takes the whole fleet down": three receivers sharing one Redis, with the
// documentation's maxConcurrentEvents: 8, and one event type whose handler hangs, ignoring its signal. Without
// bulkheads its hung runs took every slot of every instance and every other delivery was answered 503 busy. Here the
// other types' deliveries are answered 2XX throughout, the operator is told (stats, health, onError) within seconds
// of the first hang, the poison type is quarantined on every instance (answered 503, never 2XX), a restarted instance
// gives it no more than its share from its first delivery, and no event runs twice, the service's retries of the
// refused deliveries included.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type WebhookError } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, expect, it, vi } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const secret = 'whsec_bulkheads_fleet'
const POISON = 'transaction_returned'
const OTHERS = ['transaction_settled', 'merchant_activated_for_payment_type', 'sale_created_from_batch']
const INSTANCES = 3
const SLOTS = 8 // the production guide's example
const DEADLINE_MS = 1500
/** Poison events sent first, each hanging: more than the fleet's 24 slots. */
const HANGS = 36
/** Then this long of steady traffic, the poison type's events at a tenth of it, half of them hanging. */
const STEADY_MS = 6000
const TICK_MS = 25
/** The operator must be told within this of the first hang (the overrun shows `deadlineMs` after it: 1.5 s). */
const TOLD_WITHIN_MS = 60_000
/** A delivery answered non-2XX is sent again (to the next instance) after this, as the service would an hour later. */
const RETRY_AFTER_MS = 400

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const clients: Redis[] = []
afterAll(async () => {
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())))
})

interface Answer {
  eventId: string
  type: string
  status: number
  error: string | undefined
  sentAt: number
}

it('keeps the other types flowing on three receivers while one type hangs, and tells the operator', async () => {
  if (!process.env.REDIS_URL)
    throw new Error('REDIS_URL is not set: run through `pnpm test`, which starts redis-server')
  const keyPrefix = `payhooks-bulkheads:${randomUUID()}:`
  const runs = new Map<string, number>()
  const hanging = new Set<string>()
  let release!: () => void
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let firstHangAt: number | undefined
  const reported: { instance: number; error: WebhookError; at: number }[] = []
  const start = (instance: number) => {
    const client = new Redis(process.env.REDIS_URL as string)
    client.on('error', () => {})
    clients.push(client)
    const webhooks = createWebhooks({
      secret,
      store: redisStore(client, { keyPrefix, ...UNHURRIED }),
      maxConcurrentEvents: SLOTS,
      deadlineMs: DEADLINE_MS,
      leaseMs: 4 * DEADLINE_MS,
      maxRunMs: 60_000,
      checkAtStart: false,
      logger: { error() {}, warn() {} },
    })
    webhooks.onError((error) => void reported.push({ instance, error, at: Date.now() }))
    webhooks.onAny(async (event) => {
      runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
      if (hanging.has(event.event_id)) {
        firstHangAt ??= Date.now()
        await released // ignores context.signal
      } else await sleep(2)
    })
    return webhooks
  }
  const receivers = Array.from({ length: INSTANCES }, (_, instance) => start(instance))
  const messages = new Map<string, { event_id: string; event_type: string }>()

  const answers: Answer[] = []
  const pending: Promise<void>[] = []
  const sent = new Map<string, number>()
  /**
   * Sends the event to the next instance for its type (round robin, so each type reaches every instance alike);
   * anything not answered 2XX is sent again later to the instance after, up to 3 times.
   */
  const send = (message: { event_id: string; event_type: string }, tries = 1, to?: number): void => {
    const count = sent.get(message.event_type) ?? 0
    sent.set(message.event_type, count + 1)
    const instance = to ?? count % INSTANCES
    const webhooks = receivers[instance] as (typeof receivers)[number]
    const sentAt = Date.now()
    pending.push(
      (async () => {
        const { body, headers } = await signedDelivery(JSON.stringify(message), secret)
        const getHeader = (name: string) => (headers as Record<string, string>)[name]
        const answer = await webhooks.receive({ method: 'POST', body, getHeader })
        const error = (JSON.parse(answer.body) as { error?: string }).error
        answers.push({ eventId: message.event_id, type: message.event_type, status: answer.status, error, sentAt })
        if (answer.status >= 300 && tries < 3) {
          await sleep(RETRY_AFTER_MS)
          send(message, tries + 1, (instance + 1) % INSTANCES)
        }
      })(),
    )
  }
  const event = (type: string) => {
    const message = sampleEvent(type, {}) as { event_id: string; event_type: string }
    messages.set(message.event_id, message)
    return message
  }

  // The stores' first calls (scripts loaded) out of the way.
  for (const webhooks of receivers) {
    const warm = event('transaction_settled')
    expect((await webhooks.receive(await signedRequestOf(warm))).status).toBe(200)
  }

  /** Polls every instance: when the operator could first see something wrong, by which sign. */
  const told: { at: number; how: string }[] = []
  const watching = setInterval(() => {
    receivers.forEach((webhooks, instance) => {
      const stats = webhooks.stats()
      if (stats.overrunning.count > 0) told.push({ at: Date.now(), how: `stats().overrunning on ${instance}` })
    })
  }, 50)

  const startedAt = Date.now()
  try {
    let tick = 0
    while (Date.now() < startedAt + STEADY_MS) {
      if (tick < HANGS) {
        const poison = event(POISON)
        hanging.add(poison.event_id)
        send(poison)
      } else if (tick % 10 === 0) {
        const poison = event(POISON)
        if (tick % 20 === 0) hanging.add(poison.event_id)
        send(poison)
      }
      send(event(OTHERS[tick % OTHERS.length] as string))
      send(event(OTHERS[(tick + 1) % OTHERS.length] as string))
      tick++
      await sleep(TICK_MS)
    }
    // The last retries of what was refused.
    while (pending.length > 0) await Promise.all(pending.splice(0))

    const others = answers.filter((answer) => answer.type !== POISON)
    const ok = (list: Answer[]) => list.filter((answer) => answer.status < 300).length
    const refusedOthers = new Map<string, number>()
    for (const { status, error } of others.filter((answer) => answer.status >= 300)) {
      refusedOthers.set(`${status} ${error}`, (refusedOthers.get(`${status} ${error}`) ?? 0) + 1)
    }
    const why = `${others.length} answers, refused: ${JSON.stringify(Object.fromEntries(refusedOthers))}`
    expect(ok(others) / others.length, why).toBeGreaterThanOrEqual(0.95)
    // Throughout: in every second of the run, once the poison type's runs had filled what they could.
    for (let from = startedAt; from < startedAt + STEADY_MS; from += 1000) {
      const window = others.filter((answer) => answer.sentAt >= from && answer.sentAt < from + 1000)
      expect(ok(window) / window.length, `${from - startedAt} ms in`).toBeGreaterThanOrEqual(0.95)
    }

    // The operator was told, on every instance: stats at once, then the quarantine (onError and health).
    expect(firstHangAt).toBeDefined()
    expect((told[0]?.at ?? Number.POSITIVE_INFINITY) - (firstHangAt as number)).toBeLessThan(TOLD_WITHIN_MS)
    for (const [instance, webhooks] of receivers.entries()) {
      const quarantined = reported.find((report) => report.instance === instance && report.error.code === 'quarantined')
      expect(quarantined?.error.eventType, `instance ${instance}`).toBe(POISON)
      expect((quarantined?.at as number) - (firstHangAt as number)).toBeLessThan(TOLD_WITHIN_MS)
      expect(webhooks.stats().quarantined.map((type) => type.eventType)).toEqual([POISON])
      const health = await webhooks.health()
      expect(health.ready).toBe(true) // it still serves every other type
      expect(health.checks.find((check) => check.name === 'quarantined_types')?.ok).toBe(false)
      expect(health.checks.find((check) => check.name === 'overrunning_handlers')?.ok).toBe(false)
      // No instance gave the poison type more than its half of the slots.
      expect(webhooks.stats().overrunning.count).toBeLessThanOrEqual(SLOTS / 2)
    }

    // The poison type's deliveries: never 2XX unless its handlers ran and finished.
    const poisoned = answers.filter((answer) => answer.type === POISON)
    expect(poisoned.filter((answer) => answer.error === 'quarantined').length).toBeGreaterThan(0)
    for (const answer of poisoned.filter((a) => a.status < 300)) {
      expect(hanging.has(answer.eventId), answer.eventId).toBe(false)
      expect(runs.get(answer.eventId)).toBe(1)
    }

    // A restarted instance (a fresh receiver on the same store) gives the poison type no more than its share from
    // its first delivery. The service's retries of the events hung elsewhere reach it first: the store answers 409.
    const restarted = start(INSTANCES)
    receivers.push(restarted)
    const from = answers.length
    const heldElsewhere = [...runs.keys()].filter((id) => hanging.has(id)).slice(0, 6)
    for (const id of heldElsewhere) send(messages.get(id) as { event_id: string; event_type: string }, 3, INSTANCES)
    for (let tick = 0; tick < 60; tick++) {
      if (tick < 12) {
        const poison = event(POISON)
        hanging.add(poison.event_id)
        send(poison, 3, INSTANCES)
      }
      send(event(OTHERS[tick % OTHERS.length] as string), 3, INSTANCES)
      await sleep(TICK_MS)
    }
    while (pending.length > 0) await Promise.all(pending.splice(0))
    const afterRestart = answers.slice(from)
    const retried = afterRestart.filter((answer) => heldElsewhere.includes(answer.eventId))
    expect(retried.map((answer) => `${answer.status} ${answer.error}`)).toEqual(
      heldElsewhere.map(() => '409 in_progress'),
    )
    const othersThere = afterRestart.filter((answer) => answer.type !== POISON)
    expect(ok(othersThere) / othersThere.length).toBeGreaterThanOrEqual(0.95)
    await vi.waitFor(() => expect(restarted.stats().quarantined.map((type) => type.eventType)).toEqual([POISON]), {
      timeout: 10 * DEADLINE_MS,
    })
    expect(restarted.stats().overrunning.count).toBe(SLOTS / 2)

    // No event ran twice, retries included.
    expect([...runs].filter(([, count]) => count > 1)).toEqual([])
  } finally {
    clearInterval(watching)
    release()
  }
  await Promise.all(receivers.map((webhooks) => webhooks.close({ timeoutMs: 5000 })))
}, 120_000)

async function signedRequestOf(message: object) {
  const { body, headers } = await signedDelivery(JSON.stringify(message), secret)
  return { method: 'POST', body, getHeader: (name: string) => (headers as Record<string, string>)[name] }
}
