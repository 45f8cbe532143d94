import {
  EventConflictError,
  type EventHeldError,
  type HandlerError,
  type KeyHeldError,
  type PausedError,
  type QuarantinedError,
  type SchemaError,
  type StaleEventError,
  StoreError,
} from '../errors/index.js'
import { type EventHandler, report } from '../event-handler/index.js'
import { errorAnswer, ok } from '../http/answers.js'
import { LAST_TRIES_AFTER_MS } from '../service-contract.js'
import type { TelemetryScope } from '../telemetry/telemetry.js'
import { parseCreatedAt, signedEventTime } from '../time/parse.js'
import type { RawDelivery, VerifiedEvent, WebhookResult } from '../types.js'
import { isThenable } from '../util/thenable.js'
import { check } from '../validations.js'
import { cryptoProvider, type RawBody, SIGNATURE_HEADER } from '../verify/signature.js'
import { sameBytes } from './memory.js'
import type { DeadLetter, DeadLetterStore, ParkedEvent } from './types.js'

/** What parking and replaying need from the receiver; `deadLettersReady` tracks the store's one-time `init`. */
export interface ParkState {
  readonly deadLetters: DeadLetterStore | undefined
  readonly eventHandler: EventHandler
  deadLettersReady: Promise<void> | undefined
}

export { LAST_TRIES_AFTER_MS }

/** Headers a replay needs: the signature, and the content type for the record. */
const KEPT_HEADERS = [SIGNATURE_HEADER, 'content-type']
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** `store` when it looks like a {@link DeadLetterStore}, or a `TypeError` naming `createWebhooks`' option. */
export function checkDeadLetterStore(store: DeadLetterStore): DeadLetterStore {
  const methods = ['park', 'get', 'list', 'markReplayed'] as const
  check(
    typeof store === 'object' &&
      store !== null &&
      typeof store.durable === 'boolean' &&
      methods.every((name) => typeof store[name] === 'function'),
    'createWebhooks',
    'deadLetters',
    'be a dead-letter store (durable, park, get, list, markReplayed)',
    TypeError,
  )
  return store
}

/** The dead-letter store once its `init` ran (tried again after a failure), or an error when none is configured. */
export async function readyDeadLetters(state: ParkState): Promise<DeadLetterStore> {
  const store = state.deadLetters
  if (!store) throw new Error('no dead-letter store: pass one as createWebhooks({ deadLetters })')
  if (store.init) {
    try {
      state.deadLettersReady ??= Promise.resolve(store.init())
      await state.deadLettersReady
    } catch (cause) {
      state.deadLettersReady = undefined
      throw new StoreError('dead-letter init', cause)
    }
  }
  return store
}

/** The event's signed `created_at` as a date, when it is a valid timestamp. */
function createdAtOf(message: unknown): Date | undefined {
  const createdAt = (message as { created_at?: unknown } | null)?.created_at
  if (typeof createdAt !== 'string') return undefined
  const time = parseCreatedAt(createdAt)
  return Number.isNaN(time) ? undefined : new Date(time)
}

/**
 * Whether a handler failure of `event` comes on the service's last tries: signed over 71 hours ago (by its
 * `created_at`, or a `transaction_returned`'s `settlement_date`).
 */
export function onLastTries(event: VerifiedEvent, now = Date.now()): boolean {
  const signed = signedEventTime(event)
  const time = signed === undefined ? Number.NaN : parseCreatedAt(signed.text)
  return !Number.isNaN(time) && now - time > LAST_TRIES_AFTER_MS
}

/** A delivery whose body has arrived. */
type Received = Pick<RawDelivery, 'getHeader'> & { body: RawBody }

/** An error whose event may be parked. */
export type ParkableError =
  | SchemaError
  | HandlerError
  | StaleEventError
  | KeyHeldError
  | EventHeldError
  | QuarantinedError
  | PausedError

/** The codes a dead letter keeps; an event parked for another reason is kept as `handler_failed`. */
const DEAD_LETTER_CODES: ReadonlySet<string> = new Set(['schema_mismatch', 'handler_failed', 'stale_event', 'paused'])

function parkedEvent(raw: Received, error: ParkableError, event: VerifiedEvent | undefined): ParkedEvent {
  const body = typeof raw.body === 'string' ? encoder.encode(raw.body) : new Uint8Array(raw.body)
  const headers: Record<string, string> = {}
  for (const name of KEPT_HEADERS) {
    const value = raw.getHeader(name)
    if (typeof value === 'string') headers[name] = value
  }
  let message: unknown = event
  if (message === undefined) {
    try {
      message = JSON.parse(decoder.decode(body))
    } catch {}
  }
  return {
    eventId: error.eventId as string,
    eventType: error.eventType as string,
    body,
    headers,
    // A hung handler, an event still run by another delivery, a held ordering key or a quarantined type counts as a
    // handler failure (a code of its own would need every store's check widened); the reason says what happened.
    code: (DEAD_LETTER_CODES.has(error.code) ? error.code : 'handler_failed') as ParkedEvent['code'],
    reason: error.message,
    createdAt: createdAtOf(message),
    parkedAt: new Date(),
  }
}

/** Reports `error` to `onError`; but a pause, deliberate, is told by `stats()`, the journal and telemetry alone. */
function tell(state: ParkState, error: ParkableError): void {
  if (error.code !== 'paused') report(state.eventHandler, error)
}

/** The answer to a delivery handed to {@link park}, and how it ended when not in failure. */
export interface ParkAnswer {
  result: WebhookResult
  outcome: 'parked' | 'duplicate' | undefined
}

/**
 * Parks the event of `error` (a signed event refused by its schema, whose handlers failed on the service's last
 * tries, or too old to run and not known as handled) in the dead-letter store, then reports `error`. Answers 200
 * `parked` once a durable store holds it; otherwise (a store that is not durable, or parking failed: a
 * {@link StoreError} is reported too) the error's own answer, so the service retries. When the store kept a letter
 * it had (see {@link alreadyKept}), the delivery is a duplicate instead.
 */
export async function park(
  state: ParkState,
  raw: Received,
  error: ParkableError,
  event?: VerifiedEvent,
  scope?: TelemetryScope,
): Promise<ParkAnswer> {
  let store: DeadLetterStore
  let letter: ParkedEvent
  let kept: DeadLetter | undefined
  try {
    store = await readyDeadLetters(state)
    letter = parkedEvent(raw, error, event)
    const current = letter
    const parked = scope ? scope.store('park', () => store.park(current)) : store.park(current)
    kept = (isThenable(parked) ? await parked : parked) ?? undefined
  } catch (cause) {
    tell(state, error)
    const failure =
      cause instanceof StoreError ? cause : new StoreError('dead-letter park', cause, error.eventId, error.eventType)
    // The delivery gets the error's own answer, not the store's 503: the log says which.
    failure.answered = { status: error.status, code: error.code }
    report(state.eventHandler, failure)
    return { result: errorAnswer(error), outcome: undefined }
  }
  if (kept && (kept.status === 'replayed' || !sameBytes(kept.body, letter.body))) {
    return alreadyKept(state, store, letter, kept, error, scope)
  }
  error.parked = true
  if (store.durable) error.answered = { status: 200, code: 'parked' }
  tell(state, error)
  const { eventId, eventType, code } = letter
  state.eventHandler.telemetry?.parked?.({ eventId, eventType, code, durable: store.durable })
  return store.durable
    ? { result: ok(eventId, 'parked'), outcome: 'parked' }
    : { result: errorAnswer(error), outcome: undefined }
}

/**
 * The store kept the letter it had for the event: a `replayed` one (the event was handled, so this delivery is a
 * duplicate, 200) or a `parked` one of other bytes (a duplicate of the parked event: 200 with a durable store, the
 * error's answer otherwise). A copy of other bytes than the letter's is reported as an {@link EventConflictError}.
 */
async function alreadyKept(
  state: ParkState,
  store: DeadLetterStore,
  letter: ParkedEvent,
  kept: DeadLetter,
  error: ParkableError,
  scope: TelemetryScope | undefined,
): Promise<ParkAnswer> {
  const handled = kept.status === 'replayed'
  if (!sameBytes(kept.body, letter.body)) {
    const received = await cryptoProvider.digest(letter.body)
    const first = await cryptoProvider.digest(kept.body)
    const conflict = new EventConflictError(letter.eventId, letter.eventType, received, first, false, !handled)
    scope?.conflict?.(conflict)
    report(state.eventHandler, conflict)
  }
  if (handled || store.durable) return { result: ok(letter.eventId, 'duplicate'), outcome: 'duplicate' }
  tell(state, error)
  return { result: errorAnswer(error), outcome: undefined }
}
