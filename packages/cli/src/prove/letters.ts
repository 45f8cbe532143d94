// What a run leaves in the receiver's dead letters: the resend check's 80-hour-old event is parked by a receiver with
// a durable dead-letter store, a signed letter that a later replay of all would run as a real settlement. Prove's
// events are known by their id prefix; with the receiver's dead letters at hand (--module), a run deletes its own,
// and --cleanup deletes those of every earlier run.
import type { DeadLetters } from '@payhooks/core'
import { cleanText } from './answer-text.js'

/** Every event id prove sends starts with this: `evt_prove_<run>_<n>`. */
export const PROVE_ID_PREFIX = 'evt_prove_'

/** What happened to a run's letters. */
export interface LettersReport {
  /**
   * Where prove looked: `dead-letters` (the receiver's own, through `--module`), or `answers` only (what the receiver
   * said: `"status":"parked"`), when it could not look.
   */
  lookedIn: 'dead-letters' | 'answers'
  /** Event ids of the run answered `"status":"parked"`. */
  parked: string[]
  /** Letters of the run found and deleted. */
  deleted: string[]
  /** Letters of the run still there, or parked by the answers' word and not looked for: delete them (`--cleanup`). */
  left: string[]
  /** Why some could not be deleted, in one line. */
  note?: string
}

const oneLine = (error: unknown) =>
  cleanText((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '').slice(0, 200)

/** Looks up each of `ids` in `deadLetters` and deletes the letters found (when the store can delete). */
export async function deleteLetters(
  deadLetters: DeadLetters,
  ids: readonly string[],
): Promise<{ deleted: string[]; left: string[]; note?: string }> {
  const deleted: string[] = []
  const left: string[] = []
  let note: string | undefined
  for (const id of ids) {
    try {
      if (!(await deadLetters.get(id))) continue
      if (!deadLetters.delete) {
        left.push(id)
        note = 'the dead-letter store has no delete(): remove these letters with its own tools'
      } else if (await deadLetters.delete(id)) deleted.push(id)
    } catch (error) {
      left.push(id)
      note = `the dead letters failed: ${oneLine(error)}`
    }
  }
  return { deleted, left, ...(note === undefined ? {} : { note }) }
}

/** Letters read per page when looking for every run's letters. */
const PAGE = 500

/** Every letter of any prove run in `deadLetters` (parked or replayed), deleted where the store can. */
export async function cleanupLetters(deadLetters: DeadLetters) {
  const ids: string[] = []
  for (let offset = 0; ; offset += PAGE) {
    const page = await deadLetters.list({ status: 'all', order: 'oldest', limit: PAGE, offset })
    for (const letter of page) if (letter.eventId.startsWith(PROVE_ID_PREFIX)) ids.push(letter.eventId)
    if (page.length < PAGE) break
  }
  return deleteLetters(deadLetters, ids)
}
