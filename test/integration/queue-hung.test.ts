// Queue mode: a BullMQ job whose handler hangs past maxRunMs (ignoring its signal) is not run by a second worker while
// the first is alive. The first worker's dispatch stays open, so BullMQ keeps renewing its job lock (lockDuration,
// renewed every half of it) and the stalled-job check (stalledInterval) never takes it back; the dedupe store's
// claim is renewed by the receiver meanwhile.
import { randomUUID } from 'node:crypto'
import { bullmqQueue, startWorker } from '@payhooks/bullmq'
import { createWebhooks, type WebhookError, type Webhooks } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Queue } from 'bullmq'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { gate } from '../../packages/core/src/test-helpers/index.js'
import { connect, deliver, onCleanup, redisUrl, runCleanups, SECRET, sleep } from '../fixtures/queue-mode.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

afterEach(runCleanups)

// The job's lock is renewed every half of lockDurationMs and the claim every third of leaseMs: either renewal may come
// 1.5 s or more late before it lapses (at 600 and 900 ms, 300 and 600 ms of room on a loaded machine's Redis).
const LOCK_MS = 3000
const STALLED_CHECK_MS = 500

describe('queue mode and a hung handler', () => {
  it('keeps the job with its worker past maxRunMs, lockDuration and stalledInterval: the event runs once', async () => {
    const id = randomUUID()
    const names = { name: `q-hung-${id}`, prefix: `payhooks-test-bull-${id}` }
    const redis = connect()
    // Retries come fast, so a job given up on would run again within the test.
    const queue = bullmqQueue({ connection: redisUrl(), ...names, attempts: 5, backoffMs: 50 })
    onCleanup(() => queue.close())
    const errors: WebhookError[] = []
    let runs = 0
    let startedAt = Number.POSITIVE_INFINITY
    const stuck = gate()
    const workers = [0, 1].map(() => {
      const webhooks = createWebhooks({
        secret: SECRET,
        store: redisStore(redis, { keyPrefix: `payhooks-test-store:${id}:`, ...UNHURRIED }),
        queue,
        // The delivery's enqueue gets 2 s (at 100 ms, a loaded machine's Redis answered it 503 deadline_exceeded).
        deadlineMs: 2000,
        leaseMs: 3000,
        maxRunMs: 2500,
      })
      webhooks.onError((error) => void errors.push(error))
      webhooks.onAny(async () => {
        runs++
        startedAt = Date.now()
        await stuck.promise // ignores context.signal
      })
      const worker = startWorker(webhooks as Webhooks<unknown>, {
        connection: redis,
        ...names,
        lockDurationMs: LOCK_MS,
        stalledIntervalMs: STALLED_CHECK_MS,
        maxStalledCount: 2,
      })
      onCleanup(() => worker.close(true))
      return { webhooks, worker }
    })
    await Promise.all([queue.ready(), ...workers.map(({ worker }) => worker.ready())])
    const inspect = new Queue(names.name, { connection: redis, prefix: names.prefix })
    onCleanup(async () => {
      await inspect.obliterate({ force: true })
      await inspect.close()
    })
    try {
      const eventId = `evt_hung_${id}`
      expect((await deliver(workers[0]?.webhooks as Webhooks<unknown>, eventId)).status).toBe(200) // queued
      await vi.waitFor(() => expect(errors.map((e) => e.code)).toContain('handler_timeout'), { timeout: 10_000 })
      // Past the lock duration and the two stalled checks that would find a lock let lapse, with the job's retries
      // ready to run at once.
      await sleep(startedAt + LOCK_MS + 2 * STALLED_CHECK_MS + 200 - Date.now())
      expect(runs, errors.map((e) => e.message).join('\n')).toBe(1)
      expect(await inspect.getJobCounts('active', 'failed', 'delayed', 'wait')).toEqual({
        active: 1,
        failed: 0,
        delayed: 0,
        wait: 0,
      })
      expect(errors.map((e) => e.code)).toEqual(['handler_timeout'])
    } finally {
      stuck.open()
    }
    // Settled: the job completes, the event ran once.
    await vi.waitFor(async () => expect((await inspect.getJobCounts('completed')).completed).toBe(1), {
      timeout: 10_000,
      interval: 20,
    })
    expect(runs).toBe(1)
  })
})
