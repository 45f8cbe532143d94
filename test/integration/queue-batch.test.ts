// Batched enqueue (bullmqQueue({ batch })) on a real Redis: the deliveries verified in one turn of the event loop
// go to Redis in one BullMQ addBulk; a batch that fails is answered 503 for each of its deliveries.
import { randomUUID } from 'node:crypto'
import { bullmqQueue, jobIdFor, startWorker } from '@payhooks/bullmq'
import { createWebhooks, StoreError, type WebhookError, type Webhooks } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Queue } from 'bullmq'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ownRedis } from '../fixtures/own-redis.js'
import { answer, connect, onCleanup, runCleanups, SECRET, setup, signed, until } from '../fixtures/queue-mode.js'

// A spy that calls through: the jobs still go to the real Redis; it records how they were grouped.
const addBulk = vi.spyOn(Queue.prototype, 'addBulk')
afterEach(async () => {
  await runCleanups()
  addBulk.mockClear()
})

/** Sizes of the addBulk calls so far. */
const batchSizes = () => addBulk.mock.calls.map(([jobs]) => jobs.length)

/** Signs the deliveries first, then receives them all in one turn of the event loop, as a burst arrives. */
async function burst(webhooks: Webhooks<unknown>, eventIds: string[]) {
  const deliveries = await Promise.all(eventIds.map((eventId) => signed(eventId)))
  return Promise.all(deliveries.map((delivery) => answer(webhooks, delivery)))
}

/** Counts handler runs per event id. */
function countRuns(webhooks: Webhooks<unknown>) {
  const runs = new Map<string, number>()
  webhooks.on('transaction_settled', (event) => {
    runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
  })
  return runs
}

const queued = (eventId: string) => ({ status: 200, body: { ok: true, event_id: eventId, status: 'queued' } })

describe('bullmqQueue({ batch })', () => {
  it('sends the deliveries of one turn in addBulk calls of at most maxSize jobs, and runs each event once', async () => {
    const { webhooks, queue, errors, jobs } = setup({ batch: { maxSize: 16 } })
    const runs = countRuns(webhooks)
    const ids = Array.from({ length: 40 }, (_, i) => `evt_batch_${i}`)

    expect(await burst(webhooks, ids)).toEqual(ids.map(queued))
    expect(batchSizes()).toEqual([16, 16, 8])
    expect(await jobs()).toBe(40)
    await until(async () => (await queue.counts()).completed === 40, 'the jobs to complete')
    expect([...runs.keys()].sort()).toEqual([...ids].sort())
    expect([...runs.values()].every((n) => n === 1)).toBe(true)
    expect(errors).toEqual([])
  })

  it('answers every copy of an event in one batch as queued, with one job, and a later batch finds that job', async () => {
    const { webhooks, queue, errors, jobs, inspect } = setup({ batch: true })
    const runs = countRuns(webhooks)

    const first = ['evt_twice', 'evt_other', 'evt_twice', 'evt_twice']
    expect(await burst(webhooks, first)).toEqual(first.map(queued))
    expect(batchSizes()).toEqual([2])
    expect(addBulk.mock.calls[0]?.[0].map((job) => job.opts?.jobId)).toEqual([
      jobIdFor('evt_twice'),
      jobIdFor('evt_other'),
    ])
    expect(await jobs()).toBe(2)
    await until(async () => (await queue.counts()).completed === 2, 'the first jobs to complete')

    // A redelivery in a later batch: BullMQ's addBulk returns the existing job's id, as add does.
    const second = ['evt_twice', 'evt_new']
    expect(await burst(webhooks, second)).toEqual(second.map(queued))
    expect(batchSizes()).toEqual([2, 2])
    expect(await jobs()).toBe(3)
    await until(async () => (await inspect.getJobState(jobIdFor('evt_new'))) === 'completed', 'evt_new to complete')
    expect(Object.fromEntries(runs)).toEqual({ evt_twice: 1, evt_other: 1, evt_new: 1 })
    expect(errors).toEqual([])
  })

  it('sends what was enqueued before close() and answers it', async () => {
    const { webhooks, queue, jobs } = setup({ batch: true })
    await queue.ready()
    const ids = ['evt_closing_1', 'evt_closing_2']
    const deliveries = await Promise.all(ids.map((eventId) => signed(eventId)))
    // Both are enqueued (receive verifies synchronously) and close() starts in the same turn, before the batch goes.
    const answers = Promise.all(deliveries.map((delivery) => answer(webhooks, delivery)))
    await queue.close()
    expect(await answers).toEqual(ids.map(queued))
    expect(batchSizes()).toEqual([2])
    expect(await jobs()).toBe(2)
  })
})

describe('bullmqQueue({ batch }) when Redis fails', () => {
  /** A receiver in batched queue mode and a worker on a redis-server of this test. */
  async function onOwnRedis() {
    const own = await ownRedis({ kill: 'SIGKILL' })
    onCleanup(() => own.dispose())
    await own.start()
    const redis = connect(own.url)
    const name = `q-${randomUUID()}`
    const queue = bullmqQueue({ connection: own.url, name, batch: true, enqueueTimeoutMs: 500 })
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret: SECRET, store: redisStore(redis), queue, deadlineMs: 5000 })
    webhooks.onError((error) => errors.push(error))
    const runs = countRuns(webhooks as Webhooks<unknown>)
    const worker = startWorker(webhooks as Webhooks<unknown>, { connection: own.url, name })
    onCleanup(() => worker.close(true))
    onCleanup(() => queue.close())
    await queue.ready()
    return { own, redis, queue, webhooks: webhooks as Webhooks<unknown>, errors, runs }
  }

  const refused = { status: 503, error: 'store_unavailable' }
  const statusOf = ({ status, body }: { status: number; body: Record<string, unknown> }) => ({
    status,
    error: body.error,
  })

  it('answers 503 to every delivery of a batch Redis did not take in time, and the retries are queued once', async () => {
    const { redis, queue, webhooks, errors, runs } = await onOwnRedis()
    const ids = Array.from({ length: 10 }, (_, i) => `evt_paused_${i}`)

    // Redis holds every write for 1.5 s: the batch is sent but not answered within enqueueTimeoutMs (500 ms).
    await redis.call('CLIENT', 'PAUSE', '1500', 'WRITE')
    const answers = await burst(webhooks, ids)
    expect(answers.map(statusOf)).toEqual(ids.map(() => refused))
    expect(batchSizes()).toEqual([10])
    const enqueueErrors = errors.filter((e) => e instanceof StoreError && e.message.startsWith('store enqueue failed'))
    expect(enqueueErrors.map((e) => e.eventId).sort()).toEqual([...ids].sort())

    // Redis ran the batch once the pause ended; the service's retries find the jobs and are answered 200.
    await until(async () => (await queue.counts()).completed === ids.length, 'the late batch to be handled')
    expect(await burst(webhooks, ids)).toEqual(ids.map(queued))
    await until(async () => (await queue.counts()).completed === ids.length, 'the retries to settle')
    expect(Object.fromEntries(runs)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])))
  })

  it('answers 503 to every delivery of a batch while Redis is down, and queues the retries once it is back', async () => {
    const { own, queue, webhooks, runs } = await onOwnRedis()
    const ids = Array.from({ length: 6 }, (_, i) => `evt_down_${i}`)

    await own.stop()
    // Sent on a connection that has just died, or waiting for one that does not come back in time: 503 either way.
    expect((await burst(webhooks, ids)).map(statusOf)).toEqual(ids.map(() => refused))

    await own.start()
    await until(async () => (await burst(webhooks, [ids[0]!]))[0]?.status === 200, 'enqueueing to work again')
    expect(await burst(webhooks, ids)).toEqual(ids.map(queued))
    expect(batchSizes().at(-1)).toBe(ids.length)
    await until(async () => (await queue.counts()).completed === ids.length, 'the retries to be handled')
    expect(Object.fromEntries(runs)).toEqual(Object.fromEntries(ids.map((id) => [id, 1])))
  })
})
