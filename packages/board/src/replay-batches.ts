// "Replay all matching" in batches: one request replays at most `batchSize` letters, oldest first, and hands back
// a cursor for the next, so thousands of letters never ride on one HTTP request. The first request checks the
// count the operator confirmed and fixes the set: letters parked before that moment (a letter parked again
// later moves past it). Letters whose replay fails stay parked, the oldest of the set; the cursor counts them to
// skip. No batch goes past the confirmed count, so a run always ends.
import type { DeadLetterFilter } from '@payhooks/core'
import { type Answer, type Audit, countParked, outcomeJson } from './api.js'
import { BadQuery, filterFrom } from './letters.js'
import type { BoardWebhooks } from './types.js'

/** Where a run of batches stands. */
interface Cursor {
  /** The set's upper bound: letters parked before it (ISO time). */
  before: string
  /** Letters of the set left parked (their replay failed), skipped at the old end. */
  skipped: number
  /** Letters of the set handled so far (replayed, or found gone). */
  done: number
  /** The count confirmed. */
  total: number
}

const count = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0

function cursorFrom(value: unknown): Cursor {
  const cursor = value as Partial<Cursor> | null
  if (
    typeof cursor !== 'object' ||
    cursor === null ||
    typeof cursor.before !== 'string' ||
    Number.isNaN(Date.parse(cursor.before)) ||
    !count(cursor.skipped) ||
    !count(cursor.done) ||
    !count(cursor.total)
  ) {
    throw new BadQuery('cursor must be the one the last batch answered')
  }
  return cursor as Cursor
}

function filterOf(body: Record<string, unknown>): DeadLetterFilter {
  const fields = body.filter ?? {}
  if (typeof fields !== 'object' || fields === null) throw new BadQuery('filter must be an object')
  const record = fields as Record<string, unknown>
  return filterFrom((name) => (typeof record[name] === 'string' ? (record[name] as string) : null))
}

/**
 * One batch of a replay of every parked letter matching `body.filter`. Without `body.cursor`, the first: only
 * when `body.confirmCount` is the current count (else 409 with the count). Answers the batch's outcomes, the
 * progress (`done`, `failed`, `remaining`, `total`) and the `cursor` for the next batch (null once done).
 */
export async function replayBatch(
  webhooks: BoardWebhooks,
  body: Record<string, unknown>,
  audit: Audit,
  batchSize: number,
): Promise<Answer> {
  const filter = filterOf(body)
  let cursor: Cursor
  if (body.cursor === undefined || body.cursor === null) {
    const expected = body.confirmCount
    if (!count(expected)) throw new BadQuery('confirmCount must be the count you confirmed')
    const found = await countParked(webhooks, filter)
    if (found !== expected) return { status: 409, json: { error: 'the count changed: confirm again', count: found } }
    const now = new Date()
    const before = filter.parkedBefore && filter.parkedBefore < now ? filter.parkedBefore : now
    cursor = { before: before.toISOString(), skipped: 0, done: 0, total: found }
  } else {
    cursor = cursorFrom(body.cursor)
  }
  const set: DeadLetterFilter = { ...filter, parkedBefore: new Date(cursor.before) }
  const parked = await countParked(webhooks, set)
  const pending = Math.min(parked - cursor.skipped, cursor.total - cursor.done - cursor.skipped)
  const take = Math.max(0, Math.min(batchSize, pending))
  // Newest first in the store: the oldest `take` not yet skipped end at `parked - skipped`.
  const letters =
    take === 0
      ? []
      : await webhooks.deadLetters.list({
          ...set,
          status: 'parked',
          limit: take,
          offset: Math.max(0, parked - cursor.skipped - take),
        })
  const outcomes = []
  for (const letter of letters.reverse()) outcomes.push(outcomeJson(await webhooks.deadLetters.replay(letter.eventId)))
  const kept = outcomes.filter((o) => o.status === 'failed' || o.status === 'in_progress').length
  const next: Cursor = {
    ...cursor,
    skipped: cursor.skipped + kept,
    done: cursor.done + outcomes.length - kept,
  }
  const remaining = Math.max(0, next.total - next.done - next.skipped)
  if (outcomes.length > 0) {
    await audit({
      action: 'replay_all',
      filter,
      outcomes: outcomes.map(({ eventId, status }) => ({ eventId, status })),
    })
  }
  return {
    status: 200,
    json: {
      outcomes,
      total: next.total,
      done: next.done,
      failed: next.skipped,
      remaining: outcomes.length === 0 ? 0 : remaining,
      cursor: outcomes.length === 0 || remaining === 0 ? null : next,
    },
  }
}
