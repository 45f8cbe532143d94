import type { Webhooks } from '@payhooks/core'
import * as core from '@payhooks/core/validations'
import { isClient, isCluster, type QueueConnection } from './connection.js'
import type { EnqueueBatchOptions, JobRetention } from './types.js'

const DEFAULT_BATCH_SIZE = 100

// Every option check of bullmqQueue and startWorker, with its error message, so a mistake fails at
// start-up rather than on the first delivery. `caller` names the function in the message.

export function connection(value: QueueConnection, caller: string): void {
  if (typeof value === 'string') {
    if (value === '') throw new TypeError(`${caller}: connection must not be empty`)
    return
  }
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(`${caller}: connection must be a redis:// URL, ioredis options or an ioredis client`)
  }
  const keyPrefix = isCluster(value)
    ? value.options.keyPrefix || value.options.redisOptions?.keyPrefix
    : isClient(value)
      ? value.options.keyPrefix
      : value.keyPrefix
  if (keyPrefix) {
    throw new TypeError(`${caller}: BullMQ cannot use an ioredis keyPrefix; use the prefix option instead`)
  }
}

export function positiveInteger(value: number, name: string, caller: string): number {
  return core.positiveInteger(value, caller, name)
}

export function positiveMs(value: number, name: string, caller: string): number {
  return core.positiveNumber(value, caller, name)
}

export function retention(value: JobRetention, name: string, caller: string): JobRetention {
  if (value.maxAgeMs !== undefined) positiveMs(value.maxAgeMs, `${name}.maxAgeMs`, caller)
  if (value.maxCount !== undefined && !(Number.isSafeInteger(value.maxCount) && value.maxCount >= 0)) {
    throw new RangeError(`${caller}: ${name}.maxCount must be a whole number`)
  }
  return value
}

/** The batch size of the `batch` option, or undefined when batching is off. */
export function batch(value: boolean | EnqueueBatchOptions, caller: string): number | undefined {
  if (value === false) return undefined
  if (value === true) return DEFAULT_BATCH_SIZE
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(`${caller}: batch must be true, false or { maxSize }`)
  }
  return positiveInteger(value.maxSize ?? DEFAULT_BATCH_SIZE, 'batch.maxSize', caller)
}

export function queueName(name: string, caller: string): string {
  if (typeof name !== 'string' || name === '' || name.includes(':')) {
    throw new TypeError(`${caller}: name must be a non-empty string without ':'`)
  }
  return name
}

export function queuePrefix(prefix: string, caller: string): string {
  if (typeof prefix !== 'string' || prefix === '') throw new TypeError(`${caller}: prefix must be a non-empty string`)
  return prefix
}

export function offset(value: number, caller: string): number {
  if (!(Number.isSafeInteger(value) && value >= 0)) throw new RangeError(`${caller}: offset must be >= 0`)
  return value
}

export function receiver(webhooks: Pick<Webhooks<unknown>, 'dispatch' | 'report'>, caller: string): void {
  if (typeof webhooks?.dispatch !== 'function' || typeof webhooks.report !== 'function') {
    throw new TypeError(`${caller}: pass the receiver built by createWebhooks`)
  }
}
