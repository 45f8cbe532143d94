import { DEFAULT_RETENTION_MS, memoryStore } from '../memory/store.js'
import type { SchemaMapOption } from '../schemas/events.js'
import { ANSWER_LIMIT_MS, RETRY_WINDOW_MS } from '../service-contract.js'
import type { WebhookStore } from '../store.js'
import { check, inRange, positiveInteger } from '../validations.js'
import type { WebhooksOptions } from '../webhooks-options.js'

/** The longest delay a Node timer takes; a longer one fires at once. */
const MAX_TIMER_MS = 2_147_483_647

/** `createWebhooks`' options, checked, with their defaults. */
export interface CheckedOptions {
  readonly deadlineMs: number
  readonly maxBodyBytes: number
  readonly leaseMs: number
  /** `Infinity` when unbounded. */
  readonly maxRunMs: number
  readonly store: WebhookStore<object>
  readonly maxEventAgeMs: number
  readonly maxClockSkewMs: number
  /** `Infinity` when unbounded. */
  readonly maxConcurrentEvents: number
}

/** Checks `createWebhooks`' options (a `RangeError` or `TypeError` naming the option) and fills in the defaults. */
export function checkOptions(options: WebhooksOptions<SchemaMapOption, object>): CheckedOptions {
  const where = 'createWebhooks'
  const deadlineMs = inRange(
    options.deadlineMs ?? 5000,
    where,
    'deadlineMs',
    { above: 0, below: ANSWER_LIMIT_MS },
    'the service waits 10 s',
  )
  const maxBodyBytes = options.maxBodyBytes ?? 1_048_576
  check(maxBodyBytes > 0, where, 'maxBodyBytes', 'be positive')
  const leaseMs = options.leaseMs ?? 900_000
  check(leaseMs > deadlineMs, where, 'leaseMs', 'be longer than deadlineMs')
  const maxRunMs = options.maxRunMs ?? 900_000
  if (maxRunMs !== Number.POSITIVE_INFINITY) {
    inRange(
      maxRunMs,
      where,
      'maxRunMs',
      { above: deadlineMs, max: MAX_TIMER_MS },
      'longer than deadlineMs, or Infinity',
    )
  }
  const store: WebhookStore<object> = options.store ?? memoryStore({ logger: options.logger })
  const maxEventAgeMs = inRange(
    options.maxEventAgeMs ?? store.retentionMs ?? DEFAULT_RETENTION_MS,
    where,
    'maxEventAgeMs',
    { min: RETRY_WINDOW_MS },
    'the service retries for 72 hours',
  )
  const maxClockSkewMs = inRange(options.maxClockSkewMs ?? 300_000, where, 'maxClockSkewMs', { min: 0 })
  const maxConcurrentEvents = options.maxConcurrentEvents ?? store.maxConcurrentEvents ?? Number.POSITIVE_INFINITY
  if (maxConcurrentEvents !== Number.POSITIVE_INFINITY)
    positiveInteger(maxConcurrentEvents, where, 'maxConcurrentEvents')
  return { deadlineMs, maxBodyBytes, leaseMs, maxRunMs, store, maxEventAgeMs, maxClockSkewMs, maxConcurrentEvents }
}
