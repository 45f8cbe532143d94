import type { DeadLetterFilter, DeadLetters } from '../dead-letters/types.js'
import { StoreError } from '../errors/index.js'
import type { HealthCheck } from '../health/types.js'
import { check } from '../validations.js'
import type { Pause, PauseOptions, ResumeOptions, ResumeResult } from './types.js'
import type { PauseWatch } from './watch.js'

// Control characters: what could split a line of the board, the CLI or a log.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f]/

/** The longest reason a pause keeps: one line for the board's banner. */
const MAX_REASON_CHARS = 200

/** What `webhooks.pause`, `resume` and `paused` are made of. */
export interface PauseControl {
  pause(eventType: string, options?: PauseOptions): Promise<Pause>
  resume(eventType: string, options?: ResumeOptions): Promise<ResumeResult>
  paused(): Promise<Pause[]>
}

function checkType(eventType: unknown, where: string): asserts eventType is string {
  check(
    typeof eventType === 'string' && eventType !== '' && eventType.length <= 200 && !CONTROL.test(eventType),
    where,
    'eventType',
    "be an event type or '*' (a non-empty string of one line)",
    TypeError,
  )
}

async function stored<T>(
  operation: 'write' | 'remove' | 'read',
  eventType: string | undefined,
  call: () => T | Promise<T>,
): Promise<T> {
  try {
    return await call()
  } catch (cause) {
    throw new StoreError(`pause ${operation}`, cause, undefined, eventType)
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The receiver's pause controls over its {@link PauseWatch}. `pause` and `resume` write the store, then read it
 * again at once, so this instance honours the change from the moment they resolve (the others within their
 * `refreshMs`). `resume` then replays the letters parked `paused` (see {@link ResumeOptions.replay}).
 */
export function pauseControl(
  watch: PauseWatch,
  instance: string,
  deadLetters: DeadLetters | undefined,
  closing: () => boolean,
): PauseControl {
  return {
    async pause(eventType, options = {}) {
      checkType(eventType, 'pause')
      const reason = options.reason ?? ''
      check(
        typeof reason === 'string' && reason.length <= MAX_REASON_CHARS && !CONTROL.test(reason),
        'pause',
        'reason',
        `be one line of at most ${MAX_REASON_CHARS} characters`,
        TypeError,
      )
      const pause: Pause = { eventType, reason, since: new Date(), by: instance }
      await stored('write', eventType, async () => (await watch.readyStore()).pause(pause))
      await watch.refresh()
      return { ...pause, since: new Date(pause.since) }
    },
    async resume(eventType, options = {}) {
      checkType(eventType, 'resume')
      const resumed = await stored('remove', eventType, async () => (await watch.readyStore()).resume(eventType))
      await watch.refresh()
      if (!deadLetters || options.replay === false || closing()) return { resumed }
      // Resumed here, not yet elsewhere: an instance still paused would park behind a run started now.
      if (watch.propagationMs > 0) await sleep(watch.propagationMs)
      const filter: DeadLetterFilter = eventType === '*' ? { code: 'paused' } : { code: 'paused', eventType }
      const outcomes = await deadLetters.replayAll(filter)
      return outcomes.report ? { resumed, replay: outcomes.report } : { resumed }
    },
    async paused() {
      const pauses = await stored('read', undefined, async () => (await watch.readyStore()).list())
      void watch.refresh()
      return pauses.sort((a, b) => a.since.getTime() - b.since.getTime())
    },
  }
}

/** `paused` for `health()`, while a type is paused: a warning (the instance still answers every delivery). */
export function pauseCheck(watch: PauseWatch, parks: boolean): HealthCheck | undefined {
  if (!watch.active || !watch.loaded) return undefined
  const pauses = watch.list()
  const what = pauses.map((pause) => `${pause.eventType} since ${pause.since.toISOString()}`).join(', ')
  return {
    name: 'paused',
    ok: false,
    severity: 'warning',
    detail: `paused by an operator: ${what}; its deliveries are ${parks ? 'parked as paused letters, replayed on resume' : 'answered 503 paused (the service retries)'}`,
    fix: 'resume when the work is done: webhooks.resume(type), payhooks resume <type>, or the board',
  }
}
