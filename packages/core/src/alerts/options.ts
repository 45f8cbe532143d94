import type { HealthCheck } from '../health/types.js'
import type { JournalRecorder } from '../journal/index.js'
import type { HungRuns, Stats } from '../stats/index.js'
import { check, positiveInteger, positiveNumber } from '../validations.js'
import type { SecretList } from '../verify/secrets.js'
import { deadLettersGrowingWatch } from './dead-letters-growing.js'
import { handlersHungWatch } from './handlers-hung.js'
import { journalDroppingWatch } from './journal-dropping.js'
import { secretLabels, signatureFailuresWatch } from './signature-failures.js'
import { silenceWatch } from './silence.js'
import { storeMemoryWatch } from './store-memory.js'
import { subscriptionWatch } from './subscription.js'
import type { AlertsOptions } from './types.js'
import type { Watch } from './watch.js'

const WHERE = 'createWebhooks'

/** What the alerts read of the receiver: all of it off the delivery path. */
export interface AlertSources {
  readonly stats: Stats
  /** The static secret list; undefined with a resolver. */
  readonly secrets: SecretList | undefined
  hung(): HungRuns
  readonly maxSlots: number | undefined
  readonly journal: JournalRecorder | undefined
  /** The dead-letter store's count of parked letters, when it can count. */
  readonly countParked: (() => Promise<number>) | undefined
  /** The checks of `health()` (shared with readiness probes). */
  storeChecks(): Promise<readonly HealthCheck[]>
  /** The event types with an `on` handler. */
  handledTypes(): readonly string[]
}

/** Whether an alert's option leaves it on: `false` turns it off, an object (or nothing) leaves it on. */
function optionOf<T extends object>(value: T | false | undefined, name: string): T | undefined {
  if (value === false) return undefined
  check(
    value === undefined || (typeof value === 'object' && value !== null),
    WHERE,
    `alerts.${name}`,
    'be an object or false',
    TypeError,
  )
  return value ?? ({} as T)
}

/** The `alerts` option checked (a `RangeError` or `TypeError` naming it), as the watches to run and their tick. */
export function alertWatches(
  options: AlertsOptions | false | undefined,
  sources: AlertSources,
): { watches: Watch[]; checkEveryMs: number } {
  if (options === false) return { watches: [], checkEveryMs: 0 }
  const alerts = optionOf(options, 'alerts') as AlertsOptions
  const checkEveryMs = positiveNumber(alerts.checkEveryMs ?? 5000, WHERE, 'alerts.checkEveryMs')
  const watches: Watch[] = []

  const silence = alerts.silence === undefined ? undefined : optionOf(alerts.silence, 'silence')
  if (silence) {
    if (silence.silenceMs !== undefined) positiveNumber(silence.silenceMs, WHERE, 'alerts.silence.silenceMs')
    for (const [type, ms] of Object.entries(silence.types ?? {}))
      positiveNumber(ms, WHERE, `alerts.silence.types.${type}`)
    check(
      silence.silenceMs !== undefined || Object.keys(silence.types ?? {}).length > 0,
      WHERE,
      'alerts.silence',
      'give silenceMs or types',
      TypeError,
    )
    watches.push(silenceWatch(sources.stats, silence))
  }

  const signatures = optionOf(alerts.signatureFailures, 'signatureFailures')
  if (signatures) {
    const after = positiveInteger(signatures.after ?? 10, WHERE, 'alerts.signatureFailures.after')
    watches.push(signatureFailuresWatch(sources.stats, after, secretLabels(sources.secrets)))
  }

  const letters = optionOf(alerts.deadLettersGrowing, 'deadLettersGrowing')
  if (letters && sources.countParked) {
    watches.push(
      deadLettersGrowingWatch(sources.countParked, {
        growth: positiveInteger(letters.growth ?? 10, WHERE, 'alerts.deadLettersGrowing.growth'),
        windowMs: positiveNumber(letters.windowMs ?? 900_000, WHERE, 'alerts.deadLettersGrowing.windowMs'),
        everyMs: positiveNumber(letters.everyMs ?? 60_000, WHERE, 'alerts.deadLettersGrowing.everyMs'),
      }),
    )
  }

  const hung = optionOf(alerts.handlersHung, 'handlersHung')
  if (hung) {
    const count = positiveInteger(hung.count ?? 1, WHERE, 'alerts.handlersHung.count')
    watches.push(handlersHungWatch(count, () => sources.hung(), sources.maxSlots))
  }

  const memory = optionOf(alerts.storeMemory, 'storeMemory')
  if (memory) {
    const everyMs = positiveNumber(memory.everyMs ?? 30_000, WHERE, 'alerts.storeMemory.everyMs')
    watches.push(storeMemoryWatch(() => sources.storeChecks(), everyMs))
  }

  const journal = optionOf(alerts.journalDropping, 'journalDropping')
  if (journal && sources.journal) {
    const quietMs = positiveNumber(journal.quietMs ?? 60_000, WHERE, 'alerts.journalDropping.quietMs')
    watches.push(journalDroppingWatch(sources.journal, quietMs))
  }

  const subscription = alerts.subscription === undefined ? undefined : optionOf(alerts.subscription, 'subscription')
  if (subscription) {
    check(
      typeof subscription.client?.subscriptions?.get === 'function',
      WHERE,
      'alerts.subscription.client',
      'be a client of the subscription API (createClient of @payhooks/client)',
      TypeError,
    )
    check(
      typeof subscription.id === 'string' && subscription.id !== '',
      WHERE,
      'alerts.subscription.id',
      'be the subscription id',
      TypeError,
    )
    check(
      subscription.url === undefined || typeof subscription.url === 'string',
      WHERE,
      'alerts.subscription.url',
      'be a string',
      TypeError,
    )
    const everyMs = positiveNumber(subscription.everyMs ?? 300_000, WHERE, 'alerts.subscription.everyMs')
    watches.push(subscriptionWatch({ ...subscription, everyMs }, () => sources.handledTypes()))
  }
  return { watches, checkEveryMs }
}
