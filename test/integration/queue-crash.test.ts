// A worker process killed mid-handler: another worker process handles the event, exactly once to completion.
// Workers are child processes running test/fixtures/queue-worker.mjs on the built packages.
import { type ChildProcess, fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { bullmqQueue, jobIdFor } from '@payhooks/bullmq'
import { createWebhooks, type Webhooks } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error('REDIS_URL is not set: run these tests with `node scripts/test.mjs queue`, which starts redis-server')
}
const SECRET = 'whsec_queue_crash'
const FIXTURE = fileURLToPath(new URL('../fixtures/queue-worker.mjs', import.meta.url))

type Message = { ready?: true; started?: string; done?: string; error?: string }

const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

function spawnWorker(env: Record<string, string>) {
  const child = fork(FIXTURE, [], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  children.push(child)
  const messages: Message[] = []
  const waiters: (() => void)[] = []
  child.on('message', (message: Message) => {
    messages.push(message)
    for (const wake of waiters.splice(0)) wake()
  })
  const exited = once(child, 'exit')
  return {
    child,
    messages,
    exited,
    /** Resolves with the first message matching `predicate`; fails if the process exits first. */
    async next(predicate: (m: Message) => boolean, what: string, timeoutMs = 30_000): Promise<Message> {
      const end = Date.now() + timeoutMs
      for (;;) {
        const found = messages.find(predicate)
        if (found) return found
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`worker exited before ${what}`)
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
        await new Promise<void>((resolve) => {
          waiters.push(resolve)
          setTimeout(resolve, 250)
        })
      }
    },
  }
}

describe('queue mode: a worker crash', () => {
  it('is recovered by another worker process, and the event completes exactly once', async () => {
    const id = randomUUID()
    const env = {
      REDIS_URL: REDIS_URL!,
      QUEUE_NAME: `q-${id}`,
      QUEUE_PREFIX: `payhooks-test-bull-${id}`,
      STORE_PREFIX: `payhooks-test-store:${id}:`,
      COUNTER_KEY: `payhooks-test-counter:${id}`,
    }
    const redis = new Redis(REDIS_URL!, { maxRetriesPerRequest: null })
    const inspect = new Queue(env.QUEUE_NAME, { connection: redis, prefix: env.QUEUE_PREFIX })
    const queue = bullmqQueue({ connection: REDIS_URL!, name: env.QUEUE_NAME, prefix: env.QUEUE_PREFIX })
    const webhooks = createWebhooks({ secret: SECRET, queue }) as Webhooks<unknown>
    const counters = async () => redis.hgetall(env.COUNTER_KEY)
    try {
      const first = spawnWorker({ ...env, BLOCK: '1' })
      await first.next((m) => m.ready === true, 'the first worker to start')

      const { body, headers } = await signedDelivery(
        sampleEvent('transaction_settled', { eventId: 'evt_crash' }),
        SECRET,
      )
      const answer = await webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
      expect(answer.status).toBe(200)
      expect(JSON.parse(answer.body).status).toBe('queued')

      await first.next((m) => m.started === 'evt_crash', 'the first worker to start the handler')
      first.child.kill('SIGKILL')
      await first.exited
      expect(await counters()).toEqual({ started: '1' })

      const second = spawnWorker(env)
      await second.next((m) => m.done === 'evt_crash', 'the second worker to handle the event')
      const jobId = jobIdFor('evt_crash')
      for (let i = 0; i < 200 && (await inspect.getJobState(jobId)) !== 'completed'; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      expect(await inspect.getJobState(jobId)).toBe('completed')
      expect((await inspect.getJob(jobId))?.returnvalue).toBe('processed')
      // Started twice (the crashed run, then the recovery), completed once.
      expect(await counters()).toEqual({ started: '2', completed: '1' })
      expect(second.messages.some((m) => m.error?.includes('evt_crash lost its worker mid-run'))).toBe(true)

      // A redelivery after completion adds no job.
      const again = await webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
      expect(again.status).toBe(200)
      expect(Object.values(await inspect.getJobCounts()).reduce((sum, n) => sum + n, 0)).toBe(1)
      second.child.send('close')
      await second.exited
      expect(await counters()).toEqual({ started: '2', completed: '1' })
    } finally {
      await queue.close()
      await inspect.obliterate({ force: true }).catch(() => {})
      await inspect.close()
      const keys = await redis.keys(`payhooks-test-*${id}*`)
      if (keys.length > 0) await redis.del(...keys)
      redis.disconnect()
    }
  })
})
