// Replay all: one engine for `webhooks.deadLetters.replayAll`, the CLI and the board's batches.
// A run is fixed when it starts: the parked letters matching its filter and parked before that moment. It walks
// them oldest first by keyset (a failed letter stays parked behind the walk, so it is tried once, and letters that
// leave the set meanwhile cannot shift the walk). One run per store at a time in this process: a start with the
// same filter joins the run (its batches take the next letters of the same walk, so no letter is tried twice),
// one with another filter is refused. Batches are continued with a cursor this process signed and only it
// accepts, once: a forged, replayed or stale one is refused.
import type { SlotState } from '../dispatch/index.js'
import { compareDeadLetters, type DeadLetterPosition, deadLetterCursor, deadLetterQuery } from './query.js'
import { ReplayRunError, randomId, readCursor, signCursor } from './replay-cursor.js'
import type {
  DeadLetter,
  DeadLetterFilter,
  DeadLetterStore,
  DeadLetters,
  ReplayBatch,
  ReplayBatchRequest,
  ReplayCounts,
  ReplayOutcome,
  ReplayReport,
} from './types.js'

export { ReplayRunError }

/** Letters replayed at once by default. */
export const REPLAY_CONCURRENCY = 4
/** Letters a batch tries by default. */
const BATCH = 50
/** A run nobody continued for this long is over: its cursors are refused as stale. */
const RUN_IDLE_MS = 120_000
/**
 * A run with a batch under way, or one within this long, is going on: a start of the same filter joins it, of
 * another is refused. One idle longer (its console stopped) gives way to a new start, and its cursors go stale.
 */
const LIVE_MS = 5_000
/** How long a replay waits before looking again whether live deliveries still wait for a slot. */
const GIVE_WAY_MS = 5
/**
 * How long a letter found `in_progress` is tried again (every retryAfterMs, at most POLL_MS) before it is reported
 * so: letters of one ordering key replayed side by side wait for each other, and a delivery running the event
 * elsewhere usually ends within it (the letter is then a duplicate, or parked again and run now).
 */
const IN_PROGRESS_PATIENCE_MS = 10_000
const POLL_MS = 100

const changed = (count: number | undefined) =>
  new ReplayRunError('changed', 'replayAll: the count changed: confirm again', count)

type Tally = ReplayCounts

/** Which count each outcome adds to (besides `tried`). */
const FIELD: Record<ReplayOutcome['status'], Exclude<keyof Tally, 'tried'>> = {
  processed: 'processed',
  duplicate: 'duplicate',
  queued: 'queued',
  in_progress: 'inProgress',
  failed: 'failed',
  not_found: 'notFound',
}

const tally = (): Tally =>
  Object.fromEntries([['tried', 0], ...Object.values(FIELD).map((field) => [field, 0])]) as unknown as Tally

interface Caller {
  step: number
  tally: Tally
  /** The run's tried count when this caller joined. */
  since: number
}

interface Run {
  id: string
  key: string
  filter: DeadLetterFilter
  before: Date
  total: number | undefined
  position: DeadLetterPosition | undefined
  /** For a store without keyset paging: the ids still to take, read when the run started. */
  pending: string[] | undefined
  exhausted: boolean
  /** Batches under way. */
  active: number
  /** Settles once the run's count (and, without keyset paging, its ids) are read. */
  ready: Promise<unknown>
  taking: Promise<unknown>
  lastUsed: number
  tally: Tally
  callers: Map<string, Caller>
}

/** What replaying all needs from the receiver: its slots, to give way to live deliveries waiting for one. */
export type ReplayAllState = Pick<SlotState, 'slots'>

/**
 * What replaying all reads its letters from: a {@link DeadLetterStore}, or the letters of a {@link DeadLetters} of
 * your own. Without keyset paging, a run reads its ids once when it starts: through `matching` when given (every
 * letter of a filter in one pass, for letters that page by offset only at a cost growing with it), else by pages.
 */
export interface ReplaySource {
  list: DeadLetterStore['list']
  count?: DeadLetterStore['count']
  readonly keysetPaging?: boolean
  /** Every parked letter matching `filter` (its `parkedBefore` included), in any order. */
  matching?(filter: DeadLetterFilter): AsyncIterable<Pick<DeadLetter, 'eventId' | 'parkedAt'>>
}

const runsByStore = new WeakMap<ReplaySource, Map<string, Run>>()
function runsOf(store: ReplaySource): Map<string, Run> {
  let runs = runsByStore.get(store)
  if (!runs) {
    runs = new Map()
    runsByStore.set(store, runs)
  }
  const now = Date.now()
  for (const [id, run] of runs) {
    // A finished run is kept as long as an idle one: a console whose cursor was answered before the other console
    // ended the walk gets the run's final report with it, not a stale refusal.
    if (run.active === 0 && now - run.lastUsed > RUN_IDLE_MS) runs.delete(id)
  }
  return runs
}

const filterKey = (filter: DeadLetterFilter) =>
  JSON.stringify([filter.eventType, filter.code, filter.parkedAfter?.getTime(), filter.parkedBefore?.getTime()])

async function startRun(store: ReplaySource, filter: DeadLetterFilter, expected?: number): Promise<Run> {
  const runs = runsOf(store)
  const wanted = filterKey(filter)
  for (const run of runs.values()) {
    if (run.active === 0 && Date.now() - run.lastUsed > LIVE_MS) {
      runs.delete(run.id)
      continue
    }
    if (run.exhausted && run.active === 0) continue // over: kept for its late cursors only
    if (run.key === wanted && !run.exhausted) {
      // Joined: the count confirmed is the run's, taken when it started. A run paused between batches whose count
      // is not the one confirmed (its console stopped, letters changed since) gives way to a new run instead.
      await run.ready
      if (expected === undefined || expected === run.total) return run
      if (run.active > 0) throw changed(run.total)
      runs.delete(run.id)
      continue
    }
    if (run.key !== wanted) {
      throw new ReplayRunError('busy', 'replayAll: another replay of these dead letters is running: wait for it to end')
    }
  }
  // Letters parked up to this millisecond are the run's: a letter parked just now is in it.
  const now = new Date(Date.now() + 1)
  const before = filter.parkedBefore && filter.parkedBefore < now ? filter.parkedBefore : now
  const set = { ...filter, parkedBefore: before }
  const run: Run = {
    id: randomId(),
    key: wanted,
    filter: set,
    before,
    total: undefined,
    position: undefined,
    pending: undefined,
    exhausted: false,
    active: 0,
    ready: Promise.resolve(),
    taking: Promise.resolve(),
    lastUsed: Date.now(),
    tally: tally(),
    callers: new Map(),
  }
  runs.set(run.id, run)
  const reading = (async () => {
    if (store.count) run.total = await store.count({ ...set, status: 'parked' })
    if (store.keysetPaging !== true) run.pending = await allIds(store, set)
    if (run.pending && run.total === undefined) run.total = run.pending.length
  })()
  run.ready = reading.catch(() => {})
  try {
    await reading
    if (expected !== undefined && expected !== run.total) throw changed(run.total)
  } catch (error) {
    runs.delete(run.id)
    throw error
  }
  return run
}

/** Every parked id of `set`, oldest first, for a store that cannot page by keyset: read once, at the start. */
async function allIds(store: ReplaySource, set: DeadLetterFilter): Promise<string[]> {
  const letters: Pick<DeadLetter, 'eventId' | 'parkedAt'>[] = []
  const seen = new Set<string>()
  if (store.matching) {
    for await (const letter of store.matching(set)) {
      if (!seen.has(letter.eventId)) seen.add(letter.eventId) && letters.push(letter)
    }
  } else {
    for (let offset = 0; ; offset += 500) {
      const page = await store.list(deadLetterQuery({ ...set, status: 'parked', limit: 500, offset }, 'replayAll'))
      for (const letter of page) if (!seen.has(letter.eventId)) seen.add(letter.eventId) && letters.push(letter)
      if (page.length < 500) break
    }
  }
  const position = (letter: Pick<DeadLetter, 'eventId' | 'parkedAt'>) => ({
    parkedAt: letter.parkedAt.getTime(),
    eventId: letter.eventId,
  })
  letters.sort((a, b) => compareDeadLetters(position(a), position(b), 'oldest'))
  return letters.map((letter) => letter.eventId)
}

/** The next `limit` ids of the run's walk, each handed out once, whichever batch asks. */
function take(store: ReplaySource, run: Run, limit: number): Promise<string[]> {
  const taken = run.taking.then(async () => {
    if (run.exhausted) return []
    if (run.pending) {
      const ids = run.pending.splice(0, limit)
      if (run.pending.length === 0) run.exhausted = true
      return ids
    }
    const query = deadLetterQuery({ ...run.filter, status: 'parked', order: 'oldest', limit }, 'replayAll')
    const page = await store.list(run.position ? { ...query, after: deadLetterCursor(run.position) } : query)
    const last = page[page.length - 1]
    if (last) run.position = { parkedAt: last.parkedAt.getTime(), eventId: last.eventId }
    if (page.length < limit) run.exhausted = true
    return page.map((letter) => letter.eventId)
  })
  run.taking = taken.catch(() => {})
  return taken
}

/** Waits while live deliveries wait for one of the receiver's slots: replays take none of theirs. */
async function giveWay(state: ReplayAllState): Promise<void> {
  while (state.slots !== undefined && state.slots.usage().waiting > 0) {
    await new Promise((resolve) => setTimeout(resolve, GIVE_WAY_MS))
  }
}

function report(run: Run, me: Caller): { report: ReplayReport; run: ReplayReport } {
  const mine = me.tally
  const settled = run.exhausted && run.active === 0
  const figures = (counts: Tally, whole: boolean): ReplayReport => {
    const triedByOthers = whole ? 0 : run.tally.tried - me.since - mine.tried
    const gone = run.total === undefined ? undefined : Math.max(0, run.total - run.tally.tried) + run.tally.notFound
    return {
      ...counts,
      triedByOthers,
      total: run.total,
      gone: whole && settled ? gone : undefined,
      remaining: settled ? 0 : run.total === undefined ? undefined : Math.max(0, run.total - run.tally.tried),
      done: settled,
    }
  }
  return { report: figures(mine, false), run: figures(run.tally, true) }
}

/**
 * One batch of a replay of all parked letters matching `request.filter`: starts a run (or joins the one running
 * with the same filter) without a cursor, continues it with one. `replayOne` replays a letter by id through the
 * receiver (outside the live deliveries' slots: the run's `concurrency` is its own budget).
 */
export async function replayBatch(
  state: ReplayAllState,
  store: ReplaySource,
  request: ReplayBatchRequest,
  replayOne: (eventId: string) => Promise<ReplayOutcome>,
): Promise<ReplayBatch> {
  const limit = request.limit ?? BATCH
  const concurrency = request.concurrency ?? REPLAY_CONCURRENCY
  for (const [name, value] of [
    ['limit', limit],
    ['concurrency', concurrency],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`replayAll: ${name} must be a positive integer`)
  }
  let run: Run
  let caller: string
  if (request.cursor === undefined || request.cursor === null) {
    const {
      limit: _l,
      offset: _o,
      status: _s,
      order: _r,
      ...filter
    } = deadLetterQuery({ ...request.filter, status: 'parked' }, 'replayAll')
    run = await startRun(store, filter, request.confirmCount)
    caller = randomId()
    run.callers.set(caller, { step: 0, tally: tally(), since: run.tally.tried })
  } else {
    const [runId, callerId, step] = await readCursor(request.cursor)
    const found = runsOf(store).get(runId)
    const me = found?.callers.get(callerId)
    if (!found || !me || me.step !== step) {
      throw new ReplayRunError(
        'stale',
        'replayAll: the cursor is stale (used already, or its run is over): start again',
      )
    }
    run = found
    caller = callerId
  }
  const me = run.callers.get(caller) as Caller
  me.step++
  run.active++
  run.lastUsed = Date.now()
  const outcomes: ReplayOutcome[] = []
  try {
    const ids = await take(store, run, limit)
    let next = 0
    const worker = async () => {
      while (next < ids.length) {
        const index = next++
        await giveWay(state)
        const eventId = ids[index] as string
        let outcome = await replayOne(eventId)
        for (
          const until = Date.now() + IN_PROGRESS_PATIENCE_MS;
          outcome.status === 'in_progress' && Date.now() < until;
        ) {
          const wait = Math.min(Math.max(outcome.retryAfterMs ?? POLL_MS, 10), POLL_MS)
          await new Promise((resolve) => setTimeout(resolve, wait))
          outcome = await replayOne(eventId)
        }
        outcomes[index] = outcome
        for (const counts of [run.tally, me.tally]) {
          counts.tried++
          counts[FIELD[outcome.status]]++
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, ids.length) }, worker))
  } finally {
    run.active--
    run.lastUsed = Date.now()
  }
  const more = !run.exhausted
  return {
    outcomes,
    ...report(run, me),
    cursor: more ? await signCursor(run.id, caller, me.step) : null,
    filter: { ...run.filter },
  }
}

/** Replays every parked letter matching `filter` through {@link replayBatch}, batch after batch. */
export async function replayEvery(
  batch: (request: ReplayBatchRequest) => Promise<ReplayBatch>,
  filter: DeadLetterFilter = {},
  concurrency?: number,
): Promise<ReplayOutcome[] & { report: ReplayReport }> {
  const outcomes: ReplayOutcome[] = []
  let cursor: string | null | undefined
  let last: ReplayBatch
  do {
    last = await batch({ filter, cursor, limit: 500, ...(concurrency ? { concurrency } : {}) })
    outcomes.push(...last.outcomes)
    cursor = last.cursor
  } while (cursor)
  // Not enumerable: the outcomes still compare and serialize as the plain array they were before.
  return Object.defineProperty(outcomes, 'report', { value: last.run, enumerable: false }) as ReplayOutcome[] & {
    report: ReplayReport
  }
}

/**
 * Replaying all over letters of your own {@link DeadLetters} (BullMQ's dead letters use it): the same runs,
 * batches, cursors and {@link ReplayReport} as `webhooks.deadLetters.replayAll` and `replayBatch`, each letter
 * replayed by `replayOne`. Make it once per set of letters: runs are kept per `source`.
 *
 * @example
 * const { replayAll, replayBatch } = deadLetterReplayAll(
 *   { list: (query) => myLetters.list(query), count: (query) => myLetters.count(query) },
 *   (eventId) => myLetters.replay(eventId),
 * )
 */
export function deadLetterReplayAll(
  source: ReplaySource,
  replayOne: (eventId: string) => Promise<ReplayOutcome>,
): Required<Pick<DeadLetters, 'replayAll' | 'replayBatch'>> {
  const state: ReplayAllState = { slots: undefined }
  const replayBatchOf = (request: ReplayBatchRequest = {}) => replayBatch(state, source, request, replayOne)
  return {
    replayBatch: replayBatchOf,
    replayAll: (filter, options = {}) => replayEvery(replayBatchOf, filter, options.concurrency),
  }
}
