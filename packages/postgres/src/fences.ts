import type { ClaimResult, HeldOrderingKey, OrderingPosition } from '@payhooks/core'
import type { Database } from './database.js'
import {
  createFenceTableSql,
  type FenceStatements,
  fenceExpiryIndexSql,
  fenceStatements,
  fenceTokenColumnSql,
  heldKeysSql,
} from './fence-sql.js'
import { createOnce, inBatches, type Logger } from './maintenance.js'
import { alterWithin, buildIndexConcurrently, hasColumns, relationExists, retryInBackground } from './schema-change.js'
import { INDEX_DELAY_MS } from './sql.js'

interface MarkRow {
  mark_at: number | null
  mark_type: string | null
  mark_id: string | null
  fence_token: number
}

interface HeldRow {
  ordering_key: string
  holder_event_id: string
  holder_event_type: string
  since_ms: number
  until_ms: number
  fence_token: number
}

const HOLDER_COLUMNS = 'held_since, holder_event_id, holder_event_type'

/** What on-first-use migrations need: how long an `ALTER TABLE` may wait for its lock, where to log. */
export interface FirstUse {
  lockTimeoutMs: number
  logger: Logger
}

/**
 * The fence table, created when `createTable`, with the fence_token column (added, or asked for when missing): whether
 * it has the holder columns of migration 007. A table made by this call gets them at once; an earlier release's table
 * without them (and with `createTable`) has `migrate007` started in the background, the store working without them
 * meanwhile, as on a table where 007 is not applied.
 */
async function prepareTable(
  db: Database,
  table: string,
  fenceTable: string,
  createTable: boolean,
  firstUse: FirstUse,
  migrate007: () => void,
  index012: () => void,
): Promise<boolean> {
  const fresh = createTable && !(await relationExists(db, fenceTable))
  // A table made now gets its sweep index at once (it is empty); an earlier release's, built in the background.
  if (fresh) await createOnce(db, fenceTable, `${createFenceTableSql(table)};\n${fenceExpiryIndexSql(table)}`)
  else if (createTable) index012()
  // Checked before altering: ALTER TABLE locks the table, waiting on the other instances' transactions.
  if (!(await hasColumns(db.query, fenceTable, 'fence_token'))) {
    if (!createTable) {
      throw new Error(
        `postgresStore: ${fenceTable} has no fence_token column: apply sql/006_payhooks_events_fence_token.sql (or fenceTokenColumnSql)`,
      )
    }
    await alterWithin(db, '006', fenceTable, fenceTokenColumnSql(table), firstUse.lockTimeoutMs)
  }
  if (await hasColumns(db.query, fenceTable, HOLDER_COLUMNS)) return true
  if (fresh) {
    // A table made just now: 007 at once (it is empty, nothing waits), so its first claims are listed by heldKeys().
    await applyHeldKeys(db, table, fenceTable, firstUse.lockTimeoutMs)
    return true
  }
  if (createTable) migrate007()
  return false
}

/** Migration 007 on `fenceTable`: its columns under a short lock_timeout, then its index built concurrently. */
export async function applyHeldKeys(db: Database, table: string, fenceTable: string, lockTimeoutMs: number) {
  const [columns, index] = heldKeysSql(table).split(';\n') as [string, string]
  if (!(await hasColumns(db.query, fenceTable, HOLDER_COLUMNS))) {
    await alterWithin(db, '007', fenceTable, columns, lockTimeoutMs)
  }
  await buildIndexConcurrently(db, index)
}

/**
 * The Postgres store's ordering fences. A claim's fence is taken right after the claim (a crash between leaves two
 * leases that run out) and moved by the very statement that writes the done marker, inside the handlers'
 * transaction when they used `context.db`: the mark moves only if their writes commit. Tokens stay in this process,
 * as the claims they go with.
 */
export function postgresFences(
  db: Database,
  table: string,
  fenceTable: string,
  createTable: boolean,
  firstUse: FirstUse,
) {
  let sql: FenceStatements = fenceStatements(table, fenceTable)
  const held = new Map<string, OrderingPosition>()
  let ready: Promise<void> | undefined
  /** Whether the fence table has the holder columns of migration 007, once known. */
  let holders: boolean | undefined
  let migrating: { stop(): void } | undefined
  let indexing: { stop(): void } | undefined
  /** Migration 012's index on an earlier release's fence table, built concurrently in the background. */
  const index012 = () => {
    indexing ??= retryInBackground(
      async () => {
        await buildIndexConcurrently(db, fenceExpiryIndexSql(table))
      },
      {
        what: `postgresStore: migration 012 (sql/012_payhooks_sweep_indexes.sql) on ${fenceTable}`,
        meanwhile: 'the sweep of fences reads the table without its index',
        logger: firstUse.logger,
        firstDelayMs: INDEX_DELAY_MS,
      },
    )
  }
  /** Migration 007 in the background, retried with backoff; the store switches to its columns once applied. */
  const migrate007 = () => {
    migrating ??= retryInBackground(
      async () => {
        await applyHeldKeys(db, table, fenceTable, firstUse.lockTimeoutMs)
        holders = true
        sql = fenceStatements(table, fenceTable, true)
      },
      {
        what: `postgresStore: migration 007 (sql/007_payhooks_events_held_keys.sql) on ${fenceTable}`,
        meanwhile: 'ordered events are handled as before and heldKeys() rejects',
        logger: firstUse.logger,
      },
    )
  }
  /** The fence table, created on first use (a store never given a position creates nothing). */
  const prepare = () => {
    ready ??= prepareTable(db, table, fenceTable, createTable, firstUse, migrate007, index012).then((found) => {
      holders = found
      sql = fenceStatements(table, fenceTable, found)
    })
    ready.catch(() => {
      ready = undefined
    })
    return ready
  }

  return {
    /** Takes the position's key for the claim `token`, or answers how long another claim holds it. */
    async enter(eventId: string, token: string, position: OrderingPosition, leaseMs: number): Promise<ClaimResult> {
      await prepare()
      const values = holders
        ? [position.key, token, leaseMs, eventId, position.eventType]
        : [position.key, token, leaseMs]
      for (let attempt = 0; attempt < 3; attempt++) {
        const entered = await db.query<MarkRow>(sql.enter, values)
        const row = entered.rows[0]
        if (row) {
          held.set(token, position)
          const fencingToken = row.fence_token
          if (row.mark_at === null) return { status: 'claimed', token, fencingToken }
          const newest = { at: row.mark_at, eventType: row.mark_type as string, eventId: row.mark_id as string }
          return { status: 'claimed', token, newest, fencingToken }
        }
        const holder = await db.query<{ remaining_ms: number; since_ms?: number | null }>(sql.holder, [position.key])
        const remaining = holder.rows[0]?.remaining_ms
        if (remaining !== undefined && remaining > 0) {
          const since = holder.rows[0]?.since_ms
          return typeof since === 'number'
            ? { status: 'processing', retryAfterMs: Math.ceil(remaining), keyHeldSince: Math.round(since) }
            : { status: 'processing', retryAfterMs: Math.ceil(remaining) }
        }
      }
      return { status: 'processing' }
    },
    /** The extend statement for the claim `token` with its fence, if it has one. */
    extend(eventId: string, token: string, leaseMs: number) {
      const position = held.get(token)
      return position && { text: sql.extend, values: [eventId, token, leaseMs, position.key] }
    },
    /**
     * The done-marker statement that also moves the fence's mark, for the claim `token`, if it has a fence. The
     * token is kept until {@link forget}: a transaction rolled back is released after.
     */
    complete(eventId: string, token: string, retentionMs: number) {
      const position = held.get(token)
      return (
        position && {
          text: sql.complete,
          values: [eventId, token, retentionMs, position.key, position.at, position.eventType],
        }
      )
    },
    /** The release statement that also frees the fence, for the claim `token`, if it has one. */
    release(eventId: string, token: string) {
      const position = held.get(token)
      held.delete(token)
      return position && { text: sql.release, values: [eventId, token, position.key] }
    },
    /** Drops what this process keeps of the claim `token`'s fence, once its done marker is written. */
    forget(token: string): void {
      held.delete(token)
    },
    /**
     * The keys held now, longest held first. Creates nothing: no fence table yet is no key held; a table without the
     * columns of migration 007 is an error naming it.
     */
    async heldKeys(limit: number): Promise<HeldOrderingKey[]> {
      if (holders !== true) {
        try {
          if (!(await hasColumns(db.query, fenceTable, HOLDER_COLUMNS))) {
            throw new Error(
              `postgresStore: ${fenceTable} has no held_since column: apply sql/007_payhooks_events_held_keys.sql (or heldKeysSql)`,
            )
          }
        } catch (error) {
          if ((error as { code?: unknown }).code === '42P01') return []
          throw error
        }
      }
      const { rows } = await db.query<HeldRow>(fenceStatements(table, fenceTable, true).held, [limit])
      return rows.map((row) => ({
        key: row.ordering_key,
        eventId: row.holder_event_id,
        eventType: row.holder_event_type,
        since: new Date(Math.round(row.since_ms)),
        expiresAt: new Date(Math.round(row.until_ms)),
        token: row.fence_token,
      }))
    },
    /** Deletes the fences past their keep, in batches of `batch`. */
    async sweep(batch: number): Promise<number> {
      if (ready === undefined) return 0
      return inBatches(db, sql.sweep, [], batch)
    },
    /** Stops the background migrations. */
    stop(): void {
      migrating?.stop()
      indexing?.stop()
    },
  }
}
