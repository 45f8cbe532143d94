// "Replay all matching" in batches: one request replays at most `batchSize` letters and hands back a cursor for
// the next, so thousands of letters never ride on one HTTP request. The run itself is core's
// (`webhooks.deadLetters.replayBatch`): fixed when it starts, walked by keyset, each letter tried once even when
// two consoles replay the same letters at once (the second joins the first's run), its cursors signed by the
// receiver and refused when forged or used already. The first request checks the count the operator confirmed.
import type { DeadLetterFilter, ReplayReport } from '@payhooks/core'
import { type Answer, type Audit, countParked, outcomeJson, problem } from './api.js'
import { BadQuery, filterFrom } from './letters.js'
import type { BoardWebhooks } from './types.js'

const count = (value: unknown) => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0

function filterOf(body: Record<string, unknown>): DeadLetterFilter {
  const fields = body.filter ?? {}
  if (typeof fields !== 'object' || fields === null) throw new BadQuery('filter must be an object')
  const record = fields as Record<string, unknown>
  return filterFrom((name) => (typeof record[name] === 'string' ? (record[name] as string) : null))
}

/** A run refused by core: its `reason` says why, its message is one fixed line. */
const refusal = (error: unknown): { reason: string; message: string; count?: number } | undefined =>
  error instanceof Error && error.name === 'ReplayRunError'
    ? (error as Error & { reason: string; count?: number })
    : undefined

/**
 * One batch of a replay of every parked letter matching `body.filter`. Without `body.cursor`, the first: only
 * when `body.confirmCount` is the run's count (else 409 with the count; a console joining a run going on
 * confirmed the count it started with). Answers the batch's outcomes, this
 * console's figures (`report`), the whole run's (`run`: every console that replays the same letters), and the
 * `cursor` for the next batch (null once done). A forged cursor is answered 400, a stale one (used already, run
 * over) or a run of another filter going on 409.
 */
export async function replayBatch(
  webhooks: BoardWebhooks,
  body: Record<string, unknown>,
  audit: Audit,
  batchSize: number,
): Promise<Answer> {
  const deadLetters = webhooks.deadLetters
  if (!deadLetters.replayBatch) return problem(405, 'these dead letters cannot be replayed in batches')
  const filter = filterOf(body)
  let cursor: string | undefined
  let confirmCount: number | undefined
  if (body.cursor === undefined || body.cursor === null) {
    if (!count(body.confirmCount)) throw new BadQuery('confirmCount must be the count you confirmed')
    confirmCount = body.confirmCount as number
  } else {
    if (typeof body.cursor !== 'string') throw new BadQuery('cursor must be the one the last batch answered')
    cursor = body.cursor
  }
  let batch: Awaited<ReturnType<NonNullable<typeof deadLetters.replayBatch>>>
  try {
    batch = await deadLetters.replayBatch({ filter, cursor, confirmCount, limit: batchSize })
  } catch (error) {
    const refused = refusal(error)
    if (refused?.reason === 'changed') {
      // The count now, as the operator would confirm it again.
      return {
        status: 409,
        json: { error: 'the count changed: confirm again', count: await countParked(webhooks, filter) },
      }
    }
    if (refused) return problem(refused.reason === 'forged' ? 400 : 409, refused.message.replace(/^replayAll: /, ''))
    throw error
  }
  const outcomes = batch.outcomes.map(outcomeJson)
  if (outcomes.length > 0) {
    await audit({
      action: 'replay_all',
      // The run's own filter: a batch continued by cursor replays the run's letters, whatever filter its body holds.
      filter: batch.filter ?? (cursor === undefined ? filter : undefined),
      outcomes: outcomes.map(({ eventId, status }) => ({ eventId, status })),
    })
  }
  const figures = (report: ReplayReport) => ({
    ...report,
    total: report.total ?? null,
    gone: report.gone ?? null,
    remaining: report.remaining ?? null,
  })
  return {
    status: 200,
    json: {
      outcomes,
      report: figures(batch.report),
      run: figures(batch.run),
      total: batch.run.total ?? null,
      remaining: batch.run.remaining ?? null,
      cursor: batch.cursor,
    },
  }
}
