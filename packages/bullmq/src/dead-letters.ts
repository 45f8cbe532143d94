import {
  type DeadLetterFilter,
  type DeadLetters,
  deadLetterCountQuery,
  deadLetterMatches,
  deadLetterPage,
  deadLetterQuery,
  deadLetterReplayAll,
  type ReplayOutcome,
} from '@payhooks/core'
import type { DeadLetter } from './failed-jobs.js'
import type { BullmqQueue } from './queue.js'

/** Failed jobs read per call while filtering. */
const PAGE = 200

/**
 * The queue's dead letters (jobs that used all their attempts) as `@payhooks/core`'s {@link DeadLetters}, the
 * interface `webhooks.deadLetters` has too, so the same tools (`payhooks dead-letters list|show|replay`) serve
 * both. Listing reads BullMQ's failed set, newest first (a parked window by rank in it, as a count is one
 * ZCOUNT; an event type or a window of the events' `created_at` reads the jobs of the parked window, as BullMQ
 * indexes neither); `code` is always `handler_failed`, and a replayed job
 * leaves the set (so `status: 'replayed'` lists nothing). A replay moves the job back to the queue with its
 * attempts reset (`queued`); the workers then run it under the dedupe store's claim, so an event already
 * handled is not run again. The queue keeps the verified event, not the signed bytes, so nothing is verified
 * again.
 *
 * @example
 * import { bullmqDeadLetters, bullmqQueue } from '@payhooks/bullmq'
 *
 * const queue = bullmqQueue({ connection: process.env.REDIS_URL! })
 * export const deadLetters = bullmqDeadLetters(queue) // for `payhooks dead-letters --module`
 * for (const letter of await deadLetters.list({ eventType: 'transaction_settled' })) console.log(letter.reason)
 */
export function bullmqDeadLetters(queue: BullmqQueue): DeadLetters {
  const where = 'bullmqDeadLetters'

  /**
   * Every dead letter matching `filter`, newest first, reading the failed set page by page: only its parked window
   * (by rank in the failed set, scored by failure time), the rest of the filter checked on each letter.
   */
  async function* matching(filter: DeadLetterFilter): AsyncGenerator<DeadLetter> {
    const window = { parkedAfter: filter.parkedAfter, parkedBefore: filter.parkedBefore }
    for (let offset = 0; ; offset += PAGE) {
      const page = await queue.deadLetters({ offset, limit: PAGE, ...window })
      for (const letter of page) if (deadLetterMatches(letter, { ...filter, status: 'parked' })) yield letter
      if (page.length < PAGE) return
    }
  }

  async function replay(eventId: string): Promise<ReplayOutcome> {
    return { eventId, status: (await queue.replay(eventId)) ? 'queued' : 'not_found' }
  }

  const list: DeadLetters['list'] = async (query) => {
    const checked = deadLetterQuery(query, `${where}.list`)
    const { status, limit, offset, order, position, ...filter } = checked
    if (status === 'replayed') return []
    // BullMQ orders its failed set by job, not by (parkedAt, eventId): a keyset or oldest-first page reads it all.
    if (position !== undefined || order === 'oldest') {
      const letters: DeadLetter[] = []
      for await (const letter of matching(filter)) letters.push(letter)
      return deadLetterPage(letters, checked)
    }
    const { parkedAfter, parkedBefore, ...rest } = filter
    // Only a parked window: a page of the failed set by rank within it.
    if (Object.values(rest).every((value) => value === undefined)) {
      return queue.deadLetters({ offset, limit, parkedAfter, parkedBefore })
    }
    const found: DeadLetter[] = []
    let skipped = 0
    for await (const letter of matching(filter)) {
      if (skipped++ < offset) continue
      found.push(letter)
      if (found.length === limit) break
    }
    return found
  }

  const count: NonNullable<DeadLetters['count']> = async (query) => {
    const { status, ...filter } = deadLetterCountQuery(query, `${where}.count`)
    if (status === 'replayed' || (filter.code !== undefined && filter.code !== 'handler_failed')) return 0
    // The failed set's ZCOUNT over the parked window when nothing else but the code narrows it; a type or a created
    // window reads the jobs of the parked window (BullMQ keeps no index of either).
    if (filter.eventType === undefined && filter.createdAfter === undefined && filter.createdBefore === undefined) {
      return queue.countDeadLetters({ parkedAfter: filter.parkedAfter, parkedBefore: filter.parkedBefore })
    }
    let found = 0
    for await (const _ of matching(filter)) found++
    return found
  }

  // Replaying all is core's engine (the receiver's too): a run fixed at its start, its ids read in one pass of the
  // failed set, each letter tried once whichever caller asks, the same report and cursors.
  const { replayAll, replayBatch } = deadLetterReplayAll({ list, count, matching }, replay)

  return {
    list,
    count,
    get: (eventId) => queue.deadLetter(eventId),
    replay,
    replayAll: (filter, options) => {
      deadLetterQuery(filter, `${where}.replayAll`)
      return replayAll(filter, options)
    },
    replayBatch,
  }
}
