// The JSON API under /api. Reads are GET; replay and delete are POST, checked by the board before they get here.
import { type DeadLetter, type DeadLetterFilter, deadLetterCursor, deadLetterMatches } from '@payhooks/core'
import { BadQuery, queryFrom, summary, whole } from './letters.js'
import type { BoardAuditEntry, BoardWebhooks } from './types.js'

export interface Answer {
  status: number
  json: unknown
}

const ok = (json: unknown): Answer => ({ status: 200, json })
export const problem = (status: number, error: string): Answer => ({ status, json: { error } })

/** Most ids one replay or delete request may name. */
const MAX_IDS = 500
const PAGE = 500

/** How many parked letters match `filter`: the store's own count when it has one, else counted in pages. */
export async function countParked(webhooks: BoardWebhooks, filter: DeadLetterFilter): Promise<number> {
  if (typeof webhooks.deadLetters.count === 'function')
    return webhooks.deadLetters.count({ ...filter, status: 'parked' })
  let count = 0
  for (let offset = 0; ; offset += PAGE) {
    const found = await webhooks.deadLetters.list({ ...filter, status: 'parked', limit: PAGE, offset })
    count += found.length
    if (found.length < PAGE) return count
  }
}

/**
 * A page of letters, newest first, with the keyset cursors of its ends: `older` (pass it as `after`) and `newer`
 * (as `before`), null where there is nothing that way. A page continued by cursor costs the same however deep.
 */
export async function listLetters(webhooks: BoardWebhooks, params: URLSearchParams): Promise<Answer> {
  const { eventId, before, ...query } = queryFrom(params)
  const { limit } = query
  let letters: DeadLetter[]
  let hasMore: boolean
  let hasNewer = query.offset > 0 || query.after !== undefined
  if (eventId !== undefined) {
    const letter = await webhooks.deadLetters.get(eventId)
    letters =
      letter && deadLetterMatches(letter, query) && query.offset === 0 && !query.after && !before ? [letter] : []
    hasMore = false
  } else if (before !== undefined) {
    // The letters just newer than `before`: oldest first from it, then turned round.
    const newer = await webhooks.deadLetters.list({ ...query, order: 'oldest', after: before, limit: limit + 1 })
    hasNewer = newer.length > limit
    letters = newer.slice(0, limit).reverse()
    const last = letters.at(-1)
    hasMore =
      last !== undefined &&
      (await webhooks.deadLetters.list({ ...query, after: deadLetterCursor(last), limit: 1 })).length > 0
  } else {
    const found = await webhooks.deadLetters.list({ ...query, limit: limit + 1 })
    hasMore = found.length > limit
    letters = found.slice(0, limit)
  }
  const first = letters[0]
  const last = letters.at(-1)
  return ok({
    letters: letters.map(summary),
    offset: query.offset,
    limit,
    hasMore,
    older: hasMore && last ? deadLetterCursor(last) : null,
    newer: hasNewer && first ? deadLetterCursor(first) : null,
  })
}

export async function oneLetter(webhooks: BoardWebhooks, eventId: string): Promise<Answer> {
  const letter = await webhooks.deadLetters.get(eventId)
  return letter ? ok(whole(letter)) : problem(404, 'no dead letter with this id')
}

function idsFrom(body: Record<string, unknown>): string[] {
  const ids = body.eventIds
  if (
    !Array.isArray(ids) ||
    ids.length === 0 ||
    ids.length > MAX_IDS ||
    !ids.every((id) => typeof id === 'string' && id !== '' && id.length <= 200)
  ) {
    throw new BadQuery(`eventIds must be 1 to ${MAX_IDS} event ids`)
  }
  return [...new Set(ids as string[])]
}

export type Audit = (entry: Omit<BoardAuditEntry, 'actor' | 'at'>) => Promise<void>

export const outcomeJson = (outcome: Awaited<ReturnType<BoardWebhooks['deadLetters']['replay']>>) =>
  outcome.status === 'failed'
    ? { eventId: outcome.eventId, status: outcome.status, code: outcome.error.code }
    : outcome.status === 'in_progress'
      ? { eventId: outcome.eventId, status: outcome.status, retryAfterMs: outcome.retryAfterMs }
      : { eventId: outcome.eventId, status: outcome.status }

export async function replaySelected(
  webhooks: BoardWebhooks,
  body: Record<string, unknown>,
  audit: Audit,
): Promise<Answer> {
  const ids = idsFrom(body)
  const outcomes = []
  for (const id of ids) outcomes.push(outcomeJson(await webhooks.deadLetters.replay(id)))
  await audit({ action: 'replay', outcomes: outcomes.map(({ eventId, status }) => ({ eventId, status })) })
  return ok({ outcomes })
}

export async function deleteSelected(
  webhooks: BoardWebhooks,
  body: Record<string, unknown>,
  audit: Audit,
): Promise<Answer> {
  if (!webhooks.deadLetters.delete) return problem(405, 'this dead-letter store cannot delete')
  const ids = idsFrom(body)
  const deleted: string[] = []
  const notFound: string[] = []
  for (const id of ids) ((await webhooks.deadLetters.delete(id)) ? deleted : notFound).push(id)
  await audit({ action: 'delete', deleted, notFound })
  return ok({ deleted, notFound })
}
