import type { ClaimResult, HeldOrderingKey, OrderingPosition } from '@payhooks/core'
import type { Run } from './run.js'
import {
  DUPLICATE_KEY,
  epochMicros,
  errnoOf,
  fenceTableOf,
  later,
  matched,
  micros,
  quoteTable,
  remaining,
} from './sql.js'

// Ordering fences: one row per ordering key in `<table>_fences`, beside the store's table. MySQL has neither a
// conditional upsert nor data-changing CTEs, so each step is a few statements: taking a key is an INSERT, else an
// UPDATE of a row whose holder's lease ran out; the done marker and the mark move in one transaction (the handlers'
// when they used `context.db`), the fence row read FOR UPDATE first. A key freed loses its `held_since`, so
// heldKeys() reads the held keys' index entries only (NULLs sort first), never the marks kept.

/** The database's clock in microseconds since the epoch: a fencing token never below it. */
const NOW_MICROS = epochMicros('UTC_TIMESTAMP(6)')

const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))

/** The fence statements on the fence table of the store table `table`. */
export function fenceStatements(table: string) {
  const t = quoteTable(table)
  const f = quoteTable(fenceTableOf(table))
  const live = 'keep_until > UTC_TIMESTAMP(6)'
  return {
    /** key, token, lease µs, lease µs, event id, event type. */
    insert: `INSERT INTO ${f} (ordering_key, holder, held_until, keep_until, fence_token, held_since, holder_event_id, holder_event_type)
VALUES (?, ?, ${later()}, ${later()}, ${NOW_MICROS}, UTC_TIMESTAMP(6), ?, ?)`,
    /** token, lease µs, event id, event type, lease µs, key: the key taken from a holder whose lease ran out. */
    takeOver: `UPDATE ${f} SET holder = ?, held_until = ${later()}, held_since = UTC_TIMESTAMP(6), holder_event_id = ?,
holder_event_type = ?, keep_until = GREATEST(keep_until, ${later()}), fence_token = GREATEST(fence_token + 1, ${NOW_MICROS})
WHERE ordering_key = ? AND (holder IS NULL OR held_until <= UTC_TIMESTAMP(6))`,
    /** key, token: the live mark and the fencing token of the key just taken. */
    taken: `SELECT CASE WHEN ${live} THEN mark_at END AS mark_at, CASE WHEN ${live} THEN mark_type END AS mark_type,
CASE WHEN ${live} THEN mark_id END AS mark_id, fence_token FROM ${f} WHERE ordering_key = ? AND holder = ?`,
    /** key: the rest of the holder's lease and since when it holds the key. */
    holder: `SELECT ${remaining('held_until')} AS remaining_us, ${epochMicros('held_since')} AS since_us FROM ${f}
WHERE ordering_key = ? AND holder IS NOT NULL`,
    /** limit. */
    held: `SELECT ordering_key, holder_event_id, holder_event_type, ${epochMicros('held_since')} AS since_us,
${epochMicros('held_until')} AS until_us, fence_token FROM ${f}
WHERE holder IS NOT NULL AND held_since IS NOT NULL AND held_until > UTC_TIMESTAMP(6)
ORDER BY held_since, ordering_key LIMIT ?`,
    /** key, token, lease µs, lease µs, lease µs, event id, token: both rows renewed (matched), or neither. */
    extend: `UPDATE ${t} e JOIN ${f} f ON f.ordering_key = ? AND f.holder = ? AND f.held_until > UTC_TIMESTAMP(6)
SET e.expires_at = ${later()}, f.held_until = ${later()}, f.keep_until = GREATEST(f.keep_until, ${later()})
WHERE e.event_id = ? AND e.token = ? AND e.expires_at > UTC_TIMESTAMP(6)`,
    /** at, event type, event id, key, token: whether this event is newer than the live mark, the row locked. */
    lock: `SELECT (mark_at IS NULL OR NOT (${live}) OR (mark_at, mark_type, mark_id) < (?, CAST(? AS BINARY), CAST(? AS BINARY))) AS newer
FROM ${f} WHERE ordering_key = ? AND holder = ? AND held_until > UTC_TIMESTAMP(6) FOR UPDATE`,
    /** key: the key freed, the mark kept. */
    free: `UPDATE ${f} SET holder = NULL, held_since = NULL WHERE ordering_key = ?`,
    /** at, event type, event id, retention µs, key: the key freed and the mark moved. */
    mark: `UPDATE ${f} SET holder = NULL, held_since = NULL, mark_at = ?, mark_type = ?, mark_id = ?, keep_until = GREATEST(keep_until, ${later()})
WHERE ordering_key = ?`,
    /** key, token. */
    release: `UPDATE ${f} SET holder = NULL, held_since = NULL WHERE ordering_key = ? AND holder = ?`,
    /** batch. */
    sweep: `DELETE FROM ${f} WHERE keep_until < UTC_TIMESTAMP(6) AND (holder IS NULL OR held_until < UTC_TIMESTAMP(6))
ORDER BY keep_until LIMIT ?`,
  }
}

export type FenceStatements = ReturnType<typeof fenceStatements>

/**
 * The MySQL store's ordering fences. A claim's fence is taken right after the claim (a crash between leaves two leases
 * that run out) and its mark moved in the transaction that writes the done marker. Positions stay in this process,
 * as the claims they go with.
 */
export function mysqlFences(run: Run, table: string) {
  const sql = fenceStatements(table)
  const held = new Map<string, OrderingPosition>()
  return {
    sql,
    /** Takes the position's key for the claim `token`, or answers how long another claim holds it. */
    async enter(eventId: string, token: string, position: OrderingPosition, leaseMs: number): Promise<ClaimResult> {
      const us = micros(leaseMs)
      for (let attempt = 0; attempt < 3; attempt++) {
        let taken = false
        try {
          await run(sql.insert, [position.key, token, us, us, eventId, position.eventType])
          taken = true
        } catch (error) {
          if (errnoOf(error) !== DUPLICATE_KEY) throw error
          taken = matched(await run(sql.takeOver, [token, us, eventId, position.eventType, us, position.key])) === 1
        }
        if (taken) {
          held.set(token, position)
          const [row] = (await run(sql.taken, [position.key, token])) as Record<string, unknown>[]
          const fencingToken = Number(row?.fence_token)
          if (row?.mark_at === null || row?.mark_at === undefined) return { status: 'claimed', token, fencingToken }
          const newest = { at: Number(row.mark_at), eventType: text(row.mark_type), eventId: text(row.mark_id) }
          return { status: 'claimed', token, newest, fencingToken }
        }
        const [holder] = (await run(sql.holder, [position.key])) as { remaining_us: number; since_us: number }[]
        if (holder && Number(holder.remaining_us) > 0) {
          const result: ClaimResult = {
            status: 'processing',
            retryAfterMs: Math.ceil(Number(holder.remaining_us) / 1000),
          }
          if (holder.since_us !== null) result.keyHeldSince = Math.round(Number(holder.since_us) / 1000)
          return result
        }
      }
      return { status: 'processing' }
    },
    /** The position the claim `token` holds a key for, if any. */
    positionOf: (token: string) => held.get(token),
    /**
     * Moves the fence of the claim `token` with its done marker, on `tx` (inside a transaction): false when the claim
     * no longer holds its key (the lease ran out), nothing changed.
     */
    async complete(tx: Run, eventId: string, token: string, position: OrderingPosition, retentionMs: number) {
      const [row] = (await tx(sql.lock, [position.at, position.eventType, eventId, position.key, token])) as {
        newer: number
      }[]
      if (!row) return false
      const moved =
        Number(row.newer) === 1
          ? await tx(sql.mark, [position.at, position.eventType, eventId, micros(retentionMs), position.key])
          : await tx(sql.free, [position.key])
      return matched(moved) === 1
    },
    /** Frees the key of the claim `token`, if it has one. */
    async release(token: string) {
      const position = held.get(token)
      held.delete(token)
      if (position) await run(sql.release, [position.key, token])
    },
    /** Drops what this process keeps of the claim `token`'s fence, once its done marker is written. */
    forget(token: string): void {
      held.delete(token)
    },
    /** The keys held now, longest held first. */
    async heldKeys(limit: number): Promise<HeldOrderingKey[]> {
      const rows = (await run(sql.held, [limit])) as Record<string, unknown>[]
      return rows.map((row) => ({
        key: text(row.ordering_key),
        eventId: text(row.holder_event_id),
        eventType: text(row.holder_event_type),
        since: new Date(Math.round(Number(row.since_us) / 1000)),
        expiresAt: new Date(Math.round(Number(row.until_us) / 1000)),
        token: Number(row.fence_token),
      }))
    },
  }
}
