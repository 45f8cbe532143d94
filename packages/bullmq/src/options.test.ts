import { createWebhooks } from '@payhooks/core'
import { Cluster } from 'ioredis'
import { describe, expect, it } from 'vitest'
import { bullmqQueue } from './queue.js'
import { startWorker } from './worker.js'

// Every check runs before a connection is opened, so no Redis is needed here.
const connection = 'redis://127.0.0.1:1'

describe('bullmqQueue options', () => {
  it.each([
    [{ connection: '' }, TypeError, 'bullmqQueue: connection must not be empty'],
    [
      { connection: 42 as never },
      TypeError,
      'bullmqQueue: connection must be a redis:// URL, ioredis options or an ioredis client',
    ],
    [
      { connection: { keyPrefix: 'x:' } },
      TypeError,
      'bullmqQueue: BullMQ cannot use an ioredis keyPrefix; use the prefix option instead',
    ],
    [{ connection, attempts: 0 }, RangeError, 'bullmqQueue: attempts must be a positive integer'],
    [{ connection, backoffMs: -1 }, RangeError, 'bullmqQueue: backoffMs must be a positive number'],
    [
      { connection, enqueueTimeoutMs: Number.NaN },
      RangeError,
      'bullmqQueue: enqueueTimeoutMs must be a positive number',
    ],
    [
      { connection, keepCompleted: { maxAgeMs: 0 } },
      RangeError,
      'bullmqQueue: keepCompleted.maxAgeMs must be a positive number',
    ],
    [
      { connection, keepDeadLetters: { maxCount: 1.5 } },
      RangeError,
      'bullmqQueue: keepDeadLetters.maxCount must be a whole number',
    ],
    [
      { connection: new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true, keyPrefix: 'x:' }) },
      TypeError,
      'bullmqQueue: BullMQ cannot use an ioredis keyPrefix; use the prefix option instead',
    ],
    [{ connection, name: 'a:b' }, TypeError, "bullmqQueue: name must be a non-empty string without ':'"],
    [{ connection, prefix: '' }, TypeError, 'bullmqQueue: prefix must be a non-empty string'],
    [{ connection, batch: 'yes' as never }, TypeError, 'bullmqQueue: batch must be true, false or { maxSize }'],
    [{ connection, batch: { maxSize: 0 } }, RangeError, 'bullmqQueue: batch.maxSize must be a positive integer'],
  ])('refuses %o', (options, type, message) => {
    expect(() => bullmqQueue(options)).toThrow(type)
    expect(() => bullmqQueue(options)).toThrow(message)
  })
})

describe('startWorker options', () => {
  const webhooks = createWebhooks({ secret: 'whsec_options' })

  it('refuses something that is not a receiver', () => {
    expect(() => startWorker({} as never, { connection })).toThrow(
      new TypeError('startWorker: pass the receiver built by createWebhooks'),
    )
  })

  it.each([
    [{ connection: '' }, TypeError, 'startWorker: connection must not be empty'],
    [{ connection, concurrency: 2.5 }, RangeError, 'startWorker: concurrency must be a positive integer'],
    [{ connection, lockDurationMs: 0 }, RangeError, 'startWorker: lockDurationMs must be a positive number'],
    [
      { connection, stalledIntervalMs: Number.POSITIVE_INFINITY },
      RangeError,
      'startWorker: stalledIntervalMs must be a positive number',
    ],
    [{ connection, maxStalledCount: 0 }, RangeError, 'startWorker: maxStalledCount must be a positive integer'],
  ])('refuses %o', (options, type, message) => {
    expect(() => startWorker(webhooks, options)).toThrow(type)
    expect(() => startWorker(webhooks, options)).toThrow(message)
  })
})
