import { type OrderingPosition, TransactionAbortedError, type TransactionOutcome } from '@payhooks/core'
import type { Pool } from 'mysql2/promise'
import type { mysqlFences } from './fences.js'
import { type Run, runOn } from './run.js'
import { Session, StatementLog } from './session.js'
import { matched, micros } from './sql.js'
import type { BoundMysqlHandlerContext, MysqlBinding, MysqlHandlerContext } from './types.js'

/** What the done marker needs: the store's complete statement and, for a claim with a fence, the fence. */
export interface Marker {
  eventId: string
  token: string
  retentionMs: number
  complete: string
  fence?: { fences: ReturnType<typeof mysqlFences>; position: OrderingPosition }
}

/** Writes the done marker (and moves the fence) on `tx`, inside a transaction: whether the claim still held. */
export async function writeMarker(tx: Run, marker: Marker): Promise<boolean> {
  const { eventId, token, retentionMs, fence } = marker
  if (fence && !(await fence.fences.complete(tx, eventId, token, fence.position, retentionMs))) return false
  return matched(await tx(marker.complete, [micros(retentionMs), eventId, token])) === 1
}

function transactionAborted(failed: Error[]): TransactionAbortedError {
  const first = failed[0]
  const what = first ? ` (${first.message.split('\n')[0]})` : ''
  return new TransactionAbortedError(
    `a handler caught an SQL error inside context.db${what}; MySQL may have rolled back part or all of the transaction, so nothing was committed; catch SQL errors inside a SAVEPOINT (ROLLBACK TO SAVEPOINT), or let them propagate`,
    { cause: first },
  )
}

/**
 * Runs `work` (the event's handlers) with `context.db`, a connection of `pool` whose transaction opens at its first
 * statement, then writes the done marker in it if the claim's token still holds the event: committed with the
 * handlers' writes, or everything rolled back (`rolled_back` when a handler failed, `lost` when the marker found the
 * claim gone). Handlers that never used `db` hold no connection: the marker then runs alone (in a transaction of its
 * own when it moves a fence).
 */
export async function runTransaction(
  pool: Pool,
  marker: Marker,
  work: (context: MysqlHandlerContext) => Promise<boolean>,
): Promise<TransactionOutcome> {
  const session = new Session(pool)
  try {
    const ok = await work({ db: session.db })
    if (session.ready === undefined) {
      if (!ok) return 'rolled_back'
      if (!marker.fence)
        return matched(
          await runOn(pool)(marker.complete, [micros(marker.retentionMs), marker.eventId, marker.token]),
        ) === 1
          ? 'committed'
          : 'lost'
      await session.start()
    }
    const connection = await (session.ready as Promise<NonNullable<Session['connection']>>)
    const tx = runOn(connection)
    if (!ok || session.failed.length > 0) {
      await tx('ROLLBACK')
      if (!ok) return 'rolled_back'
      throw transactionAborted(session.failed)
    }
    if (!(await writeMarker(tx, marker))) {
      await tx('ROLLBACK')
      return 'lost'
    }
    await tx('COMMIT')
    return 'committed'
  } catch (error) {
    // A statement of ours failed (the marker, COMMIT, ROLLBACK) or the connection did: its state is unknown.
    if (!(error instanceof TransactionAbortedError)) session.broken = true
    throw error
  } finally {
    session.end()
  }
}

/** Thrown inside the library's transaction to have it rolled back, with an outcome that is not a failure. */
class Rollback extends Error {
  constructor(
    readonly outcome: 'rolled_back' | 'lost' | 'aborted',
    readonly failed: Error[] = [],
  ) {
    super(`transaction rolled back: ${outcome}`)
  }
}

/**
 * Runs `work` (the event's handlers) inside the library's transaction with `context.db`, its handle, then writes the
 * done marker on that handle if the claim's token still holds the event: committed by the library with the
 * handlers' writes, or everything rolled back (`rolled_back` when a handler failed, `lost` when the claim was gone).
 */
export async function runBoundTransaction<Db>(
  binding: MysqlBinding<Db>,
  marker: Marker,
  work: (context: BoundMysqlHandlerContext<Db>) => Promise<boolean>,
): Promise<TransactionOutcome> {
  try {
    return await binding.transaction(async (db): Promise<TransactionOutcome> => {
      const log = new StatementLog()
      const stop = await binding.watch?.(db, (text, error) => log.note(text, error))
      let ok: boolean
      try {
        ok = await work({ db })
      } finally {
        stop?.()
      }
      if (!ok) throw new Rollback('rolled_back')
      if (log.failed.length > 0) throw new Rollback('aborted', log.failed)
      if (!(await writeMarker((text, values = []) => binding.query(db, text, values), marker))) {
        throw new Rollback('lost')
      }
      return 'committed'
    })
  } catch (error) {
    if (!(error instanceof Rollback)) throw error
    if (error.outcome === 'aborted') throw transactionAborted(error.failed)
    return error.outcome
  }
}
