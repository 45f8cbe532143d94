// Queue mode on a real Redis: bullmqQueue + startWorker + redisStore, all in this process.
import { randomUUID } from 'node:crypto'
import { bullmqQueue, jobIdFor } from '@payhooks/bullmq'
import { createWebhooks, HandlerError, StoreError, type WebhookError, type Webhooks } from '@payhooks/core'
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest'
import { freePort, ownRedis } from '../fixtures/own-redis.js'
import { deliver, onCleanup, runCleanups, SECRET, setup, until } from '../fixtures/queue-mode.js'

afterEach(runCleanups)

function gate() {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

describe('bullmqQueue + startWorker', () => {
  it('acknowledges deliveries while their handlers are still running, then runs them', async () => {
    const { webhooks, worker, errors, queue } = setup()
    await worker.ready()
    const release = gate()
    let started = 0
    let finished = 0
    webhooks.on('transaction_settled', async () => {
      started++
      await release.promise
      finished++
    })

    const ids = Array.from({ length: 8 }, (_, i) => `evt_ack_${i}`)
    for (const id of ids) {
      expect(await deliver(webhooks, id)).toEqual({ status: 200, body: { ok: true, event_id: id, status: 'queued' } })
    }
    expect(finished).toBe(0)
    await until(() => started === ids.length, 'every handler to start')
    // Every 200 is out, every handler is running, none has finished.
    expect(finished).toBe(0)
    release.open()
    await until(() => finished === ids.length, 'the handlers to finish')
    await until(async () => (await queue.counts()).completed === ids.length, 'the jobs to complete')
    expect(errors).toEqual([])
  })

  it('enqueues one job for redeliveries and runs the handler once, also after the job is removed', async () => {
    const { webhooks, errors, inspect, jobs } = setup()
    const release = gate()
    let calls = 0
    webhooks.on('transaction_settled', async () => {
      calls++
      await release.promise
    })

    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => deliver(webhooks, 'evt_dup')))
    expect(answers.every((a) => a.status === 200 && a.body.status === 'queued')).toBe(true)
    await until(() => calls === 1, 'the handler to start')
    expect((await deliver(webhooks, 'evt_dup')).status).toBe(200)
    expect(await jobs()).toBe(1)
    release.open()
    const jobId = jobIdFor('evt_dup')
    await until(async () => (await inspect.getJobState(jobId)) === 'completed', 'the job to complete')
    expect((await inspect.getJob(jobId))?.returnvalue).toBe('processed')

    expect((await deliver(webhooks, 'evt_dup')).status).toBe(200)
    expect(await jobs()).toBe(1)
    // Once the job is gone (retention), a redelivery is a new job that the done marker stops.
    await inspect.remove(jobId)
    expect((await deliver(webhooks, 'evt_dup')).status).toBe(200)
    await until(async () => (await inspect.getJob(jobId))?.returnvalue === 'duplicate', 'the second job to finish')
    expect(calls).toBe(1)
    expect(errors).toEqual([])
  })

  it('queues event ids BullMQ would refuse as job ids (all digits, colons)', async () => {
    const { webhooks, errors, queue } = setup()
    const handled: string[] = []
    webhooks.on('transaction_settled', (event) => {
      handled.push(event.event_id)
    })

    for (const id of ['1234567', 'shop:evt:1', 'évt 1/2']) expect((await deliver(webhooks, id)).status).toBe(200)
    await until(async () => (await queue.counts()).completed === 3, 'the jobs to complete')
    expect(handled.sort()).toEqual(['1234567', 'shop:evt:1', 'évt 1/2'])
    expect(jobIdFor('1234567')).not.toMatch(/^\d+$/)
    expect(jobIdFor('shop:evt:1')).not.toContain(':')
    expect(errors).toEqual([])
  })

  it("waits out another holder's lease without spending an attempt", async () => {
    const { webhooks, errors, store, inspect } = setup({ attempts: 1 })
    let calls = 0
    webhooks.on('transaction_settled', () => {
      calls++
    })
    const held = await store.claim('evt_held', 1000)
    expect(held.status).toBe('claimed')

    expect((await deliver(webhooks, 'evt_held')).status).toBe(200)
    const jobId = jobIdFor('evt_held')
    await until(async () => (await inspect.getJobState(jobId)) === 'delayed', 'the job to be put back')
    expect(calls).toBe(0)
    await until(async () => (await inspect.getJobState(jobId)) === 'completed', 'the job to complete')
    expect(calls).toBe(1)
    expect(errors).toEqual([])
  })

  it('retries a failing handler, dead-letters it when attempts run out, and replays it', async () => {
    const { webhooks, errors, queue } = setup({ attempts: 3, backoffMs: 20 })
    let failing = true
    const calls = new Map<string, number>()
    webhooks.on('transaction_settled', (event) => {
      calls.set(event.event_id, (calls.get(event.event_id) ?? 0) + 1)
      if (failing) throw new Error('ledger unavailable')
    })

    expect((await deliver(webhooks, 'evt_dead')).status).toBe(200)
    const [letter] = await until(async () => {
      const letters = await queue.deadLetters()
      return letters.length > 0 ? letters : undefined
    }, 'the dead letter')
    expect(calls.get('evt_dead')).toBe(3)
    expect(letter).toMatchObject({
      eventId: 'evt_dead',
      eventType: 'transaction_settled',
      event: { event_id: 'evt_dead', event_type: 'transaction_settled' },
      failedReason: 'handler failed for transaction_settled evt_dead: ledger unavailable',
      attemptsMade: 3,
      jobId: jobIdFor('evt_dead'),
    })
    expect(letter?.failedAt).toBeInstanceOf(Date)
    expect(errors).toHaveLength(3)
    expect(errors.every((e) => e instanceof HandlerError && e.eventId === 'evt_dead')).toBe(true)

    expect(await queue.replay('evt_unknown')).toBe(false)
    failing = false
    expect(await queue.replay('evt_dead')).toBe(true)
    await until(async () => (await queue.counts()).completed === 1, 'the replayed job to complete')
    expect(calls.get('evt_dead')).toBe(4)
    expect(await queue.deadLetters()).toEqual([])
    expect(await queue.replay('evt_dead')).toBe(false)

    failing = true
    await deliver(webhooks, 'evt_dead_a')
    await deliver(webhooks, 'evt_dead_b')
    await until(async () => (await queue.counts()).failed === 2, 'two dead letters')
    failing = false
    expect(await queue.replayAll()).toBe(2)
    await until(async () => (await queue.counts()).completed === 3, 'the replayed jobs to complete')
    expect(calls.get('evt_dead_a')).toBe(4)
    expect(calls.get('evt_dead_b')).toBe(4)
    expect(await queue.replayAll()).toBe(0)
  })

  it('resolves one of concurrent replays of a dead letter true and the others false, and runs the event once', async () => {
    const { webhooks, queue } = setup({ attempts: 1 })
    let failing = true
    let calls = 0
    webhooks.on('transaction_settled', () => {
      calls++
      if (failing) throw new Error('ledger unavailable')
    })
    for (const eventId of ['evt_race_1', 'evt_race_2']) await deliver(webhooks, eventId)
    await until(async () => (await queue.counts()).failed === 2, 'two dead letters')
    failing = false

    const replays = await Promise.all([1, 2, 3].map(() => queue.replay('evt_race_1')))
    expect(replays.sort()).toEqual([false, false, true])
    const all = await Promise.all([queue.replayAll(), queue.replayAll()])
    expect(all[0] + all[1]).toBe(1)

    await until(async () => (await queue.counts()).completed === 2, 'the replayed jobs to complete')
    expect(calls).toBe(4)
  })

  it('shows a dead letter created_at without a zone as UTC, as the receiver read it, on a server west of UTC', async () => {
    vi.stubEnv('TZ', 'America/New_York')
    onTestFinished(() => {
      vi.unstubAllEnvs()
    })
    const { webhooks, queue } = setup({ attempts: 1 })
    webhooks.on('transaction_settled', () => {
      throw new Error('ledger unavailable')
    })
    const zoneless = new Date(Date.now() - 60_000).toISOString().slice(0, -1)
    expect((await deliver(webhooks, 'evt_zoneless', zoneless)).status).toBe(200)
    const [letter] = await until(async () => {
      const letters = await queue.deadLetters()
      return letters.length > 0 ? letters : undefined
    }, 'the dead letter')
    expect(letter?.createdAt?.toISOString()).toBe(`${zoneless}Z`)
  })
})

/** A redis-server of this test, stopped (killed) and started at will. */
async function startableRedis() {
  const own = await ownRedis({ kill: 'SIGKILL' })
  onCleanup(() => own.dispose())
  return own
}

describe('bullmqQueue when Redis is down', () => {
  function receiverOn(url: string) {
    const queue = bullmqQueue({ connection: url, name: `q-${randomUUID()}`, enqueueTimeoutMs: 500 })
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret: SECRET, queue, deadlineMs: 5000 })
    webhooks.onError((error) => errors.push(error))
    onCleanup(() => queue.close())
    return { webhooks: webhooks as Webhooks<unknown>, errors }
  }

  it('answers 503 store_unavailable, not a deadline overrun, and recovers when Redis is back', async () => {
    const redis = await startableRedis()
    await redis.start()
    const { webhooks, errors } = receiverOn(redis.url)
    expect((await deliver(webhooks, 'evt_before')).status).toBe(200)

    await redis.stop()
    const down = await deliver(webhooks, 'evt_during')
    expect(down.status).toBe(503)
    expect(down.body.error).toBe('store_unavailable')
    expect(errors.some((e) => e instanceof StoreError && e.message.startsWith('store enqueue failed'))).toBe(true)

    await redis.start()
    await until(async () => (await deliver(webhooks, 'evt_after')).status === 200, 'enqueueing to work again')
  })

  it('answers 503 store_unavailable when Redis was never reachable', async () => {
    const { webhooks } = receiverOn(`redis://127.0.0.1:${await freePort()}`)
    const answer = await deliver(webhooks, 'evt_nowhere')
    expect(answer.status).toBe(503)
    expect(answer.body.error).toBe('store_unavailable')
  })
})
