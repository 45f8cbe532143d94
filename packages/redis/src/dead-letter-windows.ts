// Counts and pages of dead letters within a window of the events' `created_at`, from the `y:` sets (scored by it)
// and the `x:` sets (in list order) of one family (status, code, event type). Whatever the windows, a read costs
// O(log n) plus the fewest members that can answer it:
// - a count: the `y:` set's ZCOUNT alone without a parked window; with one, the cheapest of reading the created
//   window's members (kept by their parked time, which the member holds), walking the parked window checking each
//   member's score, or taking off the created window the letters of the parked window's tails (a replay-all run's
//   count, bounded by its start, has a tail of the few letters parked since);
// - a page: a walk in list order (from its keyset position) checking each member's score, which stops after half as
//   many members as the created window holds; then, if the page is not full, the created window read in chunks of
//   2,000 by score (a chunk ends at a whole score, so no member is skipped or read twice however letters move),
//   each chunk's members in the page's bounds kept and the page's worth picked here. A page reads at most about the
//   created window and a half, and much less when the window's letters lie ahead; Redis never holds more than a
//   chunk's work at once.
// Members are compared as Redis does, by their bytes (as strings when they are ASCII, as ids almost always are).
import type { DeadLetterFilter, NormalizedDeadLetterQuery } from '@payhooks/core'

/** What the windows need from the store: its commands, each under the store's deadline. */
export interface WindowReads {
  zcount(key: string, min: string, max: string): Promise<number>
  zlexcount(key: string, min: string, max: string): Promise<number>
  /** ZRANGEBYSCORE key min max WITHSCORES LIMIT 0 limit: member, score, member, score... */
  byScore(key: string, min: string, max: string, limit: number): Promise<string[]>
  walk(
    lex: string,
    created: string,
    args: { min: string; max: string; lo: string; hi: string; newest: boolean; budget: number; wanted: number },
  ): Promise<{ found: string[]; last: string; scanned: number }>
}

/** Members a walk step scans at most: bounds the time one script holds Redis. */
const STEP = 1000
/** Members of a created window one read takes (more when many share its last score). */
const SCAN_CHUNK = 2000

/** ZCOUNT bounds, and the WALK script's (ms, or '' for none), of the filter's created window. */
export function createdBounds(filter: DeadLetterFilter) {
  const lo = filter.createdAfter?.getTime()
  const hi = filter.createdBefore?.getTime()
  return {
    min: lo === undefined ? '-inf' : String(lo),
    max: hi === undefined ? '+inf' : `(${hi}`,
    lo: lo === undefined ? '' : String(lo),
    hi: hi === undefined ? '' : String(hi),
  }
}

/** Non-ASCII: where JavaScript's order of strings (UTF-16) and Redis's (UTF-8 bytes) may differ. */
const NOT_ASCII = /[^ -~]/

/** Orders two members as Redis does: by their UTF-8 bytes. */
function compareMembers(a: string, b: string): number {
  if (!NOT_ASCII.test(a) && !NOT_ASCII.test(b)) return a < b ? -1 : a > b ? 1 : 0
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

/** Whether `member` lies within the ZRANGEBYLEX bounds `min` and `max`. */
function withinLex(member: string, min: string, max: string): boolean {
  if (min !== '-') {
    const order = compareMembers(member, min.slice(1))
    if (order < 0 || (order === 0 && min[0] === '(')) return false
  }
  if (max !== '+') {
    const order = compareMembers(member, max.slice(1))
    if (order > 0 || (order === 0 && max[0] === '(')) return false
  }
  return true
}

/**
 * Reads the created window `window` a chunk at a time, handing each chunk's members within the lex bounds to
 * `take`. A full chunk ends before its last score, which the next chunk starts at (or, when the chunk holds only that
 * score, every member of it is read at once and the next starts past it).
 */
async function readWindow(
  reads: WindowReads,
  created: string,
  window: { min: string; max: string },
  lex: { min: string; max: string },
  take: (members: string[]) => void,
): Promise<void> {
  for (let from = window.min; from !== ''; ) {
    let got = await reads.byScore(created, from, window.max, SCAN_CHUNK)
    let end = got.length / 2
    let next = ''
    if (end === SCAN_CHUNK) {
      const last = got[got.length - 1] as string
      while (end > 0 && got[2 * end - 1] === last) end--
      if (end === 0) {
        got = await reads.byScore(created, last, last, Number.MAX_SAFE_INTEGER)
        end = got.length / 2
        next = `(${last}`
      } else next = last
    }
    const members: string[] = []
    for (let i = 0; i < end; i++) {
      const member = got[2 * i] as string
      if (withinLex(member, lex.min, lex.max)) members.push(member)
    }
    take(members)
    from = next
  }
}

/** The complement bound: the letters below `[v` end before `(v`, those past `(v` start at `[v`. */
const flip = (bound: string) => `${bound[0] === '[' ? '(' : '['}${bound.slice(1)}`

/** Walks a lex range in list order, counting (or collecting, up to `wanted`) members within the created window. */
async function walkRange(
  reads: WindowReads,
  sets: { lex: string; created: string },
  range: { min: string; max: string; newest: boolean },
  window: { lo: string; hi: string },
  wanted: number,
  budget: number,
): Promise<{ found: string[]; done: boolean }> {
  let { min, max } = range
  const found: string[] = []
  let scannedAll = 0
  // A page's walk starts with a step of about twice what it wants (dense windows end there), then doubles.
  let size = Math.min(STEP, Math.max(64, wanted * 2))
  while (found.length < wanted && scannedAll < budget) {
    const step = Math.min(size, budget - scannedAll)
    size = Math.min(STEP, size * 2)
    const {
      found: more,
      last,
      scanned,
    } = await reads.walk(sets.lex, sets.created, {
      min,
      max,
      lo: window.lo,
      hi: window.hi,
      newest: range.newest,
      budget: step,
      wanted: wanted - found.length,
    })
    found.push(...more)
    scannedAll += scanned
    if (found.length >= wanted) return { found, done: true }
    if (scanned < step) return { found, done: true }
    if (range.newest) max = `(${last}`
    else min = `(${last}`
  }
  return { found, done: found.length >= wanted }
}

/** How many letters of the family `sets` match a created window and the parked bounds `min`/`max` (a count). */
export async function countCreated(
  reads: WindowReads,
  sets: { lex: string; created: string },
  filter: DeadLetterFilter,
  min: string,
  max: string,
): Promise<number> {
  const window = createdBounds(filter)
  const inWindow = await reads.zcount(sets.created, window.min, window.max)
  if (inWindow === 0 || (min === '-' && max === '+')) return inWindow
  const [inRange, below, above] = await Promise.all([
    reads.zlexcount(sets.lex, min, max),
    min === '-' ? 0 : reads.zlexcount(sets.lex, '-', flip(min)),
    max === '+' ? 0 : reads.zlexcount(sets.lex, flip(max), '+'),
  ])
  const count = async (from: string, to: string) =>
    (await walkRange(reads, sets, { min: from, max: to, newest: false }, window, Number.MAX_SAFE_INTEGER, Infinity))
      .found.length
  const cheapest = Math.min(inWindow, inRange, below + above)
  if (cheapest === inRange) return inRange === 0 ? 0 : count(min, max)
  if (cheapest === below + above) {
    return inWindow - (below ? await count('-', flip(min)) : 0) - (above ? await count(flip(max), '+') : 0)
  }
  let found = 0
  await readWindow(reads, sets.created, window, { min, max }, (members) => {
    found += members.length
  })
  return found
}

/**
 * The members of a page (`offset` then `limit`, in the query's order) of the family `sets` within a created window
 * and the lex bounds `min`/`max` (parked window and keyset position).
 */
export async function pageCreated(
  reads: WindowReads,
  sets: { lex: string; created: string },
  query: NormalizedDeadLetterQuery,
  min: string,
  max: string,
): Promise<string[]> {
  const window = createdBounds(query)
  const wanted = query.offset + query.limit
  const inWindow = await reads.zcount(sets.created, window.min, window.max)
  if (inWindow === 0) return []
  const newest = query.order !== 'oldest'
  // A small window is read at once; a larger one is walked in list order, up to half as many members as it holds
  // (a member walked costs Redis about twice one read from the window), then read at once.
  if (inWindow > wanted) {
    const walked = await walkRange(reads, sets, { min, max, newest }, window, wanted, Math.ceil(inWindow / 2))
    if (walked.done) return walked.found.slice(query.offset)
  }
  // The window read a chunk at a time, the page's worth of each chunk's members kept, in the page's order.
  let best: string[] = []
  const order = (a: string, b: string) => compareMembers(a, b) * (newest ? -1 : 1)
  await readWindow(reads, sets.created, window, { min, max }, (members) => {
    best = best.concat(members).sort(order)
    best.length = Math.min(best.length, wanted)
  })
  return best.slice(query.offset)
}
