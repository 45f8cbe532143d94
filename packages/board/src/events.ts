// The Events page's API: the journal's answers (`webhooks.events`) as the page shows them: an event's timeline with
// its dead letter, answers filtered and keyset-paged, or that the journal is off. The journal holds no body.
import { type EventListQuery, type Events, type JournalAnswer, type JournalGap, journalListQuery } from '@payhooks/core'
import type { Answer } from './api.js'
import { BadQuery, date } from './letters.js'
import type { BoardWebhooks } from './types.js'

/** A receiver that may have a journal (an older @payhooks/core has no `events`). */
export type JournaledWebhooks = BoardWebhooks & { events?: Events }

const MAX_PAGE = 200
const HOUR = 3_600_000
const OFF = { enabled: false as const }

/** The receiver's journal, when it has one. */
export const journalOf = (webhooks: JournaledWebhooks): Events | undefined =>
  webhooks.events?.enabled ? webhooks.events : undefined

const answerJson = (answer: JournalAnswer) => ({
  at: answer.at.toISOString(),
  status: answer.status,
  outcome: answer.outcome,
  instance: answer.instance,
  durationMs: answer.durationMs,
  verifiedWith: { index: answer.verifiedWith.index, label: answer.verifiedWith.label ?? null },
  // An older @payhooks/core has no counts of copies: each answer is one.
  copies: answer.copies ?? 1,
})

const gapJson = (gap: JournalGap) => ({
  from: gap.from.toISOString(),
  to: gap.to.toISOString(),
  instance: gap.instance,
  dropped: gap.dropped,
})

/** The most gaps the page of an id without answers lists. */
const MAX_GAPS = 20

/** For an id without answers: the spans, within retention, in which an instance dropped answers of any event. */
async function gapsKept(events: Events) {
  const { answers } = await events.list({ outcome: 'journal_gap', limit: MAX_GAPS })
  return answers
    .map((gap) => ({
      from: gap.at.toISOString(),
      to: new Date(gap.at.getTime() + gap.durationMs).toISOString(),
      instance: gap.instance,
      dropped: gap.copies ?? 1,
    }))
    .reverse()
}

const kept = (events: Events) => ({ enabled: true as const, retentionHours: (events.retentionMs ?? 0) / HOUR })

/** `GET /api/events?eventType&outcome&from&to&limit&cursor`: answers newest first, a page at a time. */
export async function listEvents(webhooks: JournaledWebhooks, params: URLSearchParams): Promise<Answer> {
  const events = journalOf(webhooks)
  if (!events) return { status: 200, json: OFF }
  const get = (name: string) => params.get(name) || undefined
  const limit = Number(get('limit') ?? 50)
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE)
    throw new BadQuery(`limit must be 1 to ${MAX_PAGE}`)
  const query: EventListQuery = { limit }
  for (const name of ['eventType', 'outcome', 'cursor'] as const) {
    const value = get(name)
    if (value !== undefined) query[name] = value
  }
  for (const name of ['from', 'to'] as const) {
    const value = date(params.get(name), name)
    if (value) query[name] = value
  }
  try {
    journalListQuery(query)
  } catch (error) {
    throw new BadQuery((error as Error).message)
  }
  const page = await events.list(query)
  return {
    status: 200,
    json: {
      ...kept(events),
      answers: page.answers.map((answer) => ({
        ...answerJson(answer),
        eventId: answer.eventId,
        eventType: answer.eventType,
      })),
      cursor: page.cursor ?? null,
      // A list by event type stops searching after a bound: answers before this time were not searched yet.
      searchedFrom: page.searchedFrom?.toISOString() ?? null,
    },
  }
}

/** `GET /api/events/<id>`: every answer the fleet gave it, oldest first, and its dead letter when there is one. */
export async function eventTimeline(webhooks: JournaledWebhooks, eventId: string): Promise<Answer> {
  const events = journalOf(webhooks)
  if (!events) return { status: 200, json: OFF }
  // The dead letter is a link: a dead-letter store that cannot answer leaves the timeline showing.
  const [timeline, letter] = await Promise.all([
    events.get(eventId),
    Promise.resolve()
      .then(() => webhooks.deadLetters.get(eventId))
      .then(
        (found) => found ?? null,
        () => undefined,
      ),
  ])
  // Where no answer was recorded, the spans in which answers were dropped say it may have been one of them (an older
  // @payhooks/core has no gaps).
  const gaps = timeline ? (timeline.gaps ?? []).map(gapJson) : await gapsKept(events).catch(() => [])
  return {
    status: 200,
    json: {
      ...kept(events),
      eventId,
      gaps,
      timeline: timeline
        ? {
            eventType: timeline.eventType,
            createdAt: timeline.createdAt,
            handledAt: timeline.handledAt?.toISOString() ?? null,
            answers: timeline.answers.map(answerJson),
          }
        : null,
      deadLetter:
        letter === undefined
          ? { unavailable: true }
          : letter && { status: letter.status, code: letter.code, parkedAt: letter.parkedAt.toISOString() },
    },
  }
}
