import { dispatch, dispatchInSlotPromise, observeDispatch, type SlotState } from '../dispatch/index.js'
import { InternalError, PausedError, PayloadError, StoreError, WebhookError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import type { JournalRecorder } from '../journal/recorder.js'
import { eventsView } from '../journal/view.js'
import type { PauseWatch } from '../pause/watch.js'
import type { VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import { cryptoProvider } from '../verify/signature.js'
import {
  type VerifiedWithSink,
  type VerifyState,
  verifyAndParse,
  withoutAgeChecks,
} from '../verify/verify-and-parse.js'
import { type ParkState, readyDeadLetters } from './park.js'
import { deadLetterCountQuery, deadLetterQuery } from './query.js'
import { replayBatch, replayEvery } from './replay-all.js'
import type {
  DeadLetter,
  DeadLetterCountQuery,
  DeadLetterFilter,
  DeadLetterStore,
  DeadLetters,
  ReplayBatchRequest,
  ReplayOutcome,
} from './types.js'

/**
 * What replaying needs from the receiver: verification, dispatch, the dead-letter store, and its journal (which
 * records each replay and, when it has one, tells when a duplicate was handled).
 */
export interface ReplayState extends VerifyState, SlotState, ParkState {
  readonly journal?: JournalRecorder | undefined
  /** The pauses in force: a letter of a paused type is not run (it stays parked, `failed` with a `PausedError`). */
  readonly pauses?: PauseWatch
}

/** How long a replay waits for the journal to say when a duplicate was handled, before leaving it unknown. */
const JOURNAL_WAIT_MS = 1000

/** When the journal says `eventId` was handled (its first handled answer), or undefined when it cannot tell. */
async function handledAtInJournal(state: ReplayState, eventId: string): Promise<Date | undefined> {
  if (!state.journal) return undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, JOURNAL_WAIT_MS, undefined)
  })
  try {
    const timeline = await Promise.race([eventsView(state.journal).get(eventId), late])
    return timeline?.handledAt ?? undefined
  } catch {
    return undefined // The journal is an account, not the truth: the duplicate stays, its time unknown.
  } finally {
    clearTimeout(timer)
  }
}

/** Runs `work` as running work of the receiver (so `close` waits for it), or rejects once it is closing. */
export type Guard = <T>(work: () => Promise<T>) => Promise<T>

async function stored<T>(
  operation: 'get' | 'list' | 'mark' | 'delete' | 'count',
  eventId: string | undefined,
  call: () => T | Promise<T>,
): Promise<T> {
  try {
    const value = call()
    return isThenable(value) ? await value : value
  } catch (cause) {
    throw cause instanceof StoreError ? cause : new StoreError(`dead-letter ${operation}`, cause, eventId)
  }
}

/**
 * Verifies the letter's bytes against the receiver's current secrets and schemas, then runs the event under the
 * store's claim, as a delivery would. Marks it replayed once handled (or found handled already).
 */
async function replayLetter(
  state: ReplayState,
  store: DeadLetterStore,
  letter: DeadLetter,
  outsideSlots: boolean,
): Promise<ReplayOutcome> {
  const startedAt = Date.now()
  const sink: VerifiedWithSink & { event?: VerifiedEvent } = { verifiedWith: undefined }
  const outcome = await replayVerified(state, store, letter, outsideSlots, sink)
  // Verified with a secret of ours: the journal says the event was replayed, and how (`replay_processed`...).
  if (sink.event && sink.verifiedWith) state.journal?.replayed(sink.event, sink.verifiedWith, outcome.status, startedAt)
  return outcome
}

async function replayVerified(
  state: ReplayState,
  store: DeadLetterStore,
  letter: DeadLetter,
  outsideSlots: boolean,
  sink: VerifiedWithSink & { event?: VerifiedEvent },
): Promise<ReplayOutcome> {
  const { eventId } = letter
  const failed = (error: WebhookError): ReplayOutcome => ({ eventId, status: 'failed', error })
  let verified: VerifiedEvent
  try {
    const delivery = { body: letter.body, getHeader: (name: string) => letter.headers[name] }
    verified = await verifyAndParse(withoutAgeChecks(state), delivery, letter.body, sink)
  } catch (cause) {
    if (cause instanceof WebhookError) return failed(cause)
    return failed(new InternalError(cause, { event_id: eventId, event_type: letter.eventType }))
  }
  if (verified.event_id !== eventId) {
    return failed(
      new PayloadError('invalid_envelope', `stored body is event ${verified.event_id}, not ${eventId}`, eventId),
    )
  }
  sink.event = verified
  const pause = state.pauses?.pauseOf(verified.event_type)
  if (pause) return failed(new PausedError(pause.since, pause.eventType, eventId, verified.event_type))
  let outcome: Awaited<ReturnType<typeof dispatchInSlotPromise>>
  try {
    const digest = await cryptoProvider.digest(letter.body)
    const scope = state.eventHandler.telemetry?.dispatch(verified, { source: 'replay' })
    const attempt = { answered: true, scope, digest, verifiedWith: sink.verifiedWith }
    // A replay of all runs on its own budget, outside the slots live deliveries wait for.
    const dispatching = outsideSlots
      ? Promise.resolve().then(() => dispatch(state, verified, attempt))
      : dispatchInSlotPromise(state, verified, attempt)
    if (scope) observeDispatch(scope, dispatching, verified)
    outcome = await dispatching
  } catch (error) {
    return failed(error instanceof WebhookError ? error : new InternalError(error, verified))
  }
  if (outcome.status === 'in_progress') return { eventId, status: 'in_progress', retryAfterMs: outcome.retryAfterMs }
  try {
    await stored('mark', eventId, () => store.markReplayed(eventId, new Date()))
  } catch (error) {
    // Handled all the same: the letter still reads parked, and replaying it again answers duplicate.
    report(state.eventHandler, error as StoreError)
  }
  if (outcome.status === 'duplicate') {
    const handledAt = await handledAtInJournal(state, eventId)
    return handledAt ? { eventId, status: 'duplicate', handledAt } : { eventId, status: 'duplicate' }
  }
  return { eventId, status: outcome.status }
}

/** Replays the letter of `eventId`: `not_found` when there is none, `duplicate` when it was replayed already. */
export async function replay(state: ReplayState, eventId: string, outsideSlots = false): Promise<ReplayOutcome> {
  if (typeof eventId !== 'string' || eventId === '') throw new TypeError('replay: eventId must be a non-empty string')
  const store = await readyDeadLetters(state)
  const letter = await stored('get', eventId, () => store.get(eventId))
  if (!letter) return { eventId, status: 'not_found' }
  // Handled already: the letter says so even once the dedupe store has forgotten the event.
  if (letter.status === 'replayed') {
    return letter.replayedAt
      ? { eventId, status: 'duplicate', handledAt: letter.replayedAt }
      : { eventId, status: 'duplicate' }
  }
  return replayLetter(state, store, letter, outsideSlots)
}

/** One batch of a replay of all (see `replay-all.ts`), each letter read again and replayed outside the slots. */
export async function replayAllBatch(state: ReplayState, request: ReplayBatchRequest = {}) {
  const store = await readyDeadLetters(state)
  return replayBatch(state, store, request, (eventId) => replay(state, eventId, true))
}

/** Replays every parked letter matching `filter`, oldest first, each once, `concurrency` at a time. */
export function replayAll(state: ReplayState, filter: DeadLetterFilter = {}, options: { concurrency?: number } = {}) {
  return replayEvery((request) => replayAllBatch(state, request), filter, options.concurrency)
}

/** The receiver's {@link DeadLetters}: its dead-letter store's letters, replayed through the receiver itself. */
export function deadLetterView(state: ReplayState, guard: Guard): DeadLetters {
  return {
    list: (query) =>
      guard(async () => {
        const store = await readyDeadLetters(state)
        const checked = deadLetterQuery(query, 'deadLetters.list')
        return stored('list', undefined, () => store.list(checked))
      }),
    get: (eventId) =>
      guard(async () => {
        const store = await readyDeadLetters(state)
        return stored('get', eventId, () => store.get(eventId))
      }),
    replay: (eventId) => guard(() => replay(state, eventId)),
    replayAll: (filter, options) => guard(() => replayAll(state, filter, options)),
    replayBatch: (request) => guard(() => replayAllBatch(state, request)),
    ...(state.deadLetters ? { durable: state.deadLetters.durable } : {}),
    ...(state.deadLetters?.count
      ? {
          count: (query?: DeadLetterCountQuery) =>
            guard(async () => {
              const checked = deadLetterCountQuery(query, 'deadLetters.count')
              const store = await readyDeadLetters(state)
              return stored('count', undefined, () => store.count?.(checked) ?? 0)
            }),
        }
      : {}),
    ...(state.deadLetters?.delete
      ? {
          delete: (eventId: string) =>
            guard(async () => {
              if (typeof eventId !== 'string' || eventId === '') {
                throw new TypeError('deadLetters.delete: eventId must be a non-empty string')
              }
              const store = await readyDeadLetters(state)
              return stored('delete', eventId, () => store.delete?.(eventId) ?? false)
            }),
        }
      : {}),
  }
}
