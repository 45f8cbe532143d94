import type { Pool } from 'mysql2/promise'

/** Says what `value` is, for a refusal: never its contents (a pool's config holds a password). */
function describe(value: unknown): string {
  if (value === null) return 'null'
  if (typeof value !== 'object') return typeof value
  const object = value as Record<string, unknown>
  const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'Object'
  if (typeof object.connect === 'function' && ('totalCount' in object || 'idleCount' in object))
    return 'a pg Pool (node-postgres): for PostgreSQL, use postgresStore of @payhooks/postgres'
  if (typeof object.getConnection === 'function' && typeof object.promise === 'function' && !('pool' in object))
    return 'a callback-style mysql2 Pool (from "mysql2"): pass pool.promise(), or create it with createPool from "mysql2/promise"'
  if (typeof object.getConnection === 'function' && typeof object.of === 'function')
    return 'a mysql2 PoolCluster: pass one of its pools'
  if (typeof object.query === 'function' && !('getConnection' in object))
    return `a single connection (${name}): the store checks a connection out per event, so it needs a pool`
  return `an object (${name})`
}

/** Whether `pool` is a mysql2/promise Pool: a `getConnection` answering promises over a core pool. */
function isPromisePool(pool: unknown): pool is Pool {
  const object = pool as Record<string, unknown> | null
  return (
    typeof object === 'object' &&
    object !== null &&
    typeof object.getConnection === 'function' &&
    typeof object.query === 'function' &&
    typeof (object.pool as Record<string, unknown> | undefined)?.getConnection === 'function'
  )
}

/** Whether `pool.end()` was called: mysql2 then refuses every statement ("Pool is closed"). */
export const isClosed = (pool: Pool) => (pool.pool as unknown as { _closed?: boolean })._closed === true

/**
 * Refuses, at creation, what is not a live mysql2/promise Pool, naming what it got and what it needs, rather than
 * failing at the first event.
 */
export function checkPool(pool: unknown, where: string): Pool {
  if (!isPromisePool(pool)) {
    throw new TypeError(
      `${where}: needs a mysql2/promise Pool (import mysql from 'mysql2/promise'; mysql.createPool(...)); got ${describe(pool)}`,
    )
  }
  checkOpen(pool, where)
  return pool
}

/** Refuses a pool already ended. */
export function checkOpen(pool: Pool, where: string): void {
  if (isClosed(pool)) {
    throw new Error(`${where}: got a closed mysql2 Pool (pool.end() was called); it needs a live one`)
  }
}
