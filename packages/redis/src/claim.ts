import type { Cluster, Redis } from 'ioredis'
import { type BatchCommand, type BatchReplies, inOneWrite } from './batch.js'
import type { ConnectionDeadline } from './connection.js'
import { type MarkerLayout, type MarkerPlace, READS, recordIn } from './layout.js'

// An unordered event's claim without a script (issue 49): one write (batch.ts) of `SET <event> <token> NX PX <lease>`
// and one `MGET` of the marker strings' counts (`<base>n`) and of the strings that this process's copy of those counts
// names (layout.ts: "hashes" below), whose records the client searches (a script cost Redis about 45k instructions more
// than the `SET` alone; an `HGET` of a listpack hash, the layout's first form, 3.5k, and 15k once it held 90 fields).
// Safe because a completion deletes the event's key in the same script that writes its done marker: a `SET NX` that
// succeeds runs after any completion of the event, so the reads after it see that marker wherever the counts then
// said it could be. When the counts read name a hash the batch did not read (the copy was stale: a generation started
// or grew a level), those are read in a second round trip. A marker found after a `SET NX` that succeeded is a copy:
// its claim is given back. A `SET NX` that failed with no marker found (a claim in progress, a layout-1 `done`) is
// answered by the claim script, atomically, as before. An ordered claim on a Redis with Functions sends its take (the
// event's key and its fence, one function) in place of the `SET NX`, on the same argument (store.ts).

/**
 * A claim script's answer: claimed (the generation's count value, a hint for the completion), a done marker (layout 2
 * or 1), or a live claim's lease left and digest.
 */
export type ClaimReply = number | ['d', string] | string | [number, string | null]

type Arg = string | number | Buffer

/** Copies of the counts kept, at most (one per Cluster slot tag, 16,384, when the prefix has no hash tag). */
const KEPT = 20_000
const noop = () => {}

/** The hashes that may hold the marker of id-hash bits `h`, read newest first as MARKERS_LUA's findMarker reads them. */
export function markerHashes(counts: Buffer | null, base: string, h: number, gen: number): string[] {
  const hashes: string[] = []
  if (counts === null) return hashes
  for (let pos = 0; pos + 8 <= counts.length; pos += 8) {
    const g = counts.readUInt32BE(pos)
    if (g > gen + 1 || g <= gen + 1 - READS) continue
    const v = counts.readUInt32BE(pos + 4)
    const levels = v % 16
    let c = (v - levels) / 16
    for (let level = 0; level <= levels; level++) {
      hashes.push(`${base}${g}:${c}:${h % c}`)
      c /= 4
    }
  }
  return hashes
}

/** Generation `gen`'s count value in `counts` (0: none yet). */
function countOf(counts: Buffer | null, gen: number): number {
  if (counts === null) return 0
  for (let pos = 0; pos + 8 <= counts.length; pos += 8) {
    if (counts.readUInt32BE(pos) === gen) return counts.readUInt32BE(pos + 4)
  }
  return 0
}

/**
 * The hashes a claim reads from a copy of the counts: those it names, and, when it names none of generation `gen`,
 * the hash `gen`'s first marker most likely went to since (MARKERS_LUA's markerHash: the previous generation's top
 * bucket count, `min` with none), so that a new generation's first markers, or a Cluster slot's, cost no second read.
 */
function claimReads(counts: Buffer | null, base: string, h: number, gen: number, min: number): string[] {
  const hashes = markerHashes(counts, base, h, gen)
  if (countOf(counts, gen) > 0) return hashes
  const previous = countOf(counts, gen - 1)
  const c = previous > 0 ? (previous - (previous % 16)) / 16 : min
  hashes.push(`${base}${gen}:${c}:${h % c}`)
  return hashes
}

/** The hash a marker of generation `gen` goes to when its count value is `v` (> 0): the top level's. */
export function topHash(base: string, h: number, gen: number, v: number): string {
  const c = (v - (v % 16)) / 16
  return `${base}${gen}:${c}:${h % c}`
}

/** The marker of `field` in the hashes an `MGET` read from `from` on, as hex (its value is digest bytes). */
function markerIn(hashes: (Buffer | null)[] | undefined, field: Buffer, from: number): string | undefined {
  if (hashes === undefined) return undefined
  for (let i = from; i < hashes.length; i++) {
    const records = hashes[i]
    if (records === null || records === undefined) continue
    const found = recordIn(records, field)
    if (found !== undefined) return found
  }
  return undefined
}

/** The `MGET`'s reply in a batch's replies: the counts, then each hash read (a null where it has none). */
const readOf = (replies: BatchReplies, at: number) => (replies[at]?.[1] ?? undefined) as (Buffer | null)[] | undefined

/**
 * The replies of a pipeline, or its first error as a rejection (seen by the deadline's call: a full Redis's refusal
 * is noted for health), after giving back the claim its `SET NX` took, if any.
 */
function replies(
  exec: Promise<BatchReplies | null>,
  giveBack: () => void,
  accept: (all: BatchReplies) => boolean = () => false,
  taken: (reply: unknown) => boolean = () => false,
): Promise<BatchReplies> {
  return exec.then((all) => {
    if (all === null) throw new Error('redisStore: a claim pipeline was aborted')
    const failed = all.find(([error]) => error !== null)
    if (failed === undefined || accept(all)) return all
    if (all[0]?.[0] === null && taken(all[0][1])) giveBack()
    throw failed[0]
  })
}

/** A `SET NX` refused (a full Redis) whose reads found the event's marker: a copy of a handled event, answered done. */
const refusedCopy = (field: Buffer) => (all: BatchReplies) =>
  all[0]?.[0] !== null && all[1]?.[0] === null && markerIn(readOf(all, 1), field, 1) !== undefined

export interface EventClaims {
  client: Redis | Cluster
  layout: MarkerLayout
  keyPrefix: string
  call: ConnectionDeadline['call']
  /** The claim script (CLAIM_SCRIPT): KEYS the event's key and the markers' base; ARGV token, lease, field, gen. */
  script(...args: Arg[]): Promise<ClaimReply>
  /** Drops the claim if `token` still holds it. */
  release(key: string, token: string): Promise<unknown>
}

/** What a claim's batch found: the first command's reply or error, the event's marker (hex), the generation's count. */
export interface BatchClaim {
  readonly reply: unknown
  readonly error: Error | null
  readonly marker: string | undefined
  readonly count: number
}

/**
 * The claims of events: an unordered event's (and, on a Cluster, an ordered event's own), one batch and the script
 * when needed; and `withReads`, any command that takes the event's key sent with the marker reads after it (the
 * ordered claim of a Redis with Functions).
 */
export function eventClaims({ client, layout, keyPrefix, call, script, release }: EventClaims) {
  /** This process's copy of each base's counts; absent when it has none or saw none. */
  const known = new Map<string, Buffer>()

  /** The first marker in `hashes` (a claim's second read, with the counts its first read found). */
  const readAgain = async (hashes: string[], field: Buffer) => {
    const found = await call(
      () => replies(inOneWrite(client, [['mgetBuffer', ...hashes]]), noop),
      'claim got no reply from Redis',
    )
    return markerIn(readOf(found, 0), field, 0)
  }

  /**
   * Sends `take` (a command that takes the event's key, or fails to) and the `MGET` of the reads of the marker at
   * `place` after it, in
   * one write; `taken(reply)` says whether it took the key. A marker found is the event's; none found is an answer
   * when the reads cover each hash that the counts, read after the key was taken, name: those hold every marker
   * written before (a second read otherwise, after which `giveBack` runs if it failed). `accept` keeps the batch's
   * replies although one is an error (a full Redis's refused `SET` whose reads found the marker).
   */
  const withReads = async (
    place: MarkerPlace,
    gen: number,
    take: BatchCommand,
    taken: (reply: unknown) => boolean,
    giveBack: () => void,
    accept?: (field: Buffer) => (all: BatchReplies) => boolean,
  ): Promise<BatchClaim> => {
    const { field, base, h, min } = place
    const before = known.get(base) ?? null
    const hashes = claimReads(before, base, h, gen, min)
    const first = await call(
      () =>
        replies(
          inOneWrite(client, [take, ['mgetBuffer', `${base}n`, ...hashes]]),
          giveBack,
          (all) => all[1]?.[0] === null && all[0]?.[0] !== null && (accept?.(field)(all) ?? true),
          taken,
        ),
      'claim got no reply from Redis',
      giveBack,
    )
    const [error, reply] = first[0] as [Error | null, unknown]
    const read = readOf(first, 1) as (Buffer | null)[]
    const counts = read[0] ?? null
    if (counts === null) known.delete(base)
    else if (before === null || !counts.equals(before)) {
      if (known.size >= KEPT) known.clear()
      known.set(base, counts)
    }
    let marker = markerIn(read, field, 1)
    if (error === null && taken(reply) && marker === undefined) {
      const covered = new Set(hashes)
      const named = markerHashes(counts, base, h, gen)
      if (!named.every((hash) => covered.has(hash))) {
        try {
          marker = await readAgain(
            named.filter((hash) => !covered.has(hash)),
            field,
          )
        } catch (failure) {
          giveBack()
          throw failure
        }
      }
    }
    return { reply, error, marker, count: countOf(counts, gen) }
  }

  /** Claims `eventId` reading the generations around `gen`; the count value it answers when claimed is `gen`'s. */
  async function claimEvent(eventId: string, token: string, lease: number, gen: number): Promise<ClaimReply> {
    const key = keyPrefix + eventId
    // The batch may still run once Redis answers again: drop the lease it would leave (sent after it).
    const giveBack = () => {
      release(key, token).catch(noop)
    }
    const isSet = (reply: unknown) => reply === 'OK'
    const place = layout.marker(eventId)
    const found = await withReads(place, gen, ['set', key, token, 'PX', lease, 'NX'], isSet, giveBack, refusedCopy)
    if (found.error !== null) {
      // Refused (a full Redis), its reads found the marker: a copy of a handled event.
      if (found.marker !== undefined) return ['d', found.marker]
      throw found.error
    }
    if (isSet(found.reply)) {
      if (found.marker === undefined) return found.count
      // A copy of a handled event: its claim goes (a failed release only leaves it to its lease, the marker found).
      await release(key, token).catch(noop)
      return ['d', found.marker]
    }
    if (found.marker !== undefined) return ['d', found.marker]
    return call(
      () => script(key, place.base, token, lease, place.field, gen),
      'claim got no reply from Redis',
      giveBack,
    )
  }

  return { claimEvent, withReads }
}
