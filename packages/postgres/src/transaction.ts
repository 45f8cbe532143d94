import { TransactionAbortedError, type TransactionOutcome } from '@payhooks/core'
import { sqlStateOf } from './database.js'
import type { BoundHandlerContext, PostgresBinding } from './types.js'

/** SQLSTATE `in_failed_sql_transaction`: an earlier statement failed, so the transaction refuses every other. */
export const IN_FAILED_TRANSACTION = '25P02'

/**
 * Thrown inside the library's transaction to have it rolled back, with an outcome that is not a failure of the
 * connection: the handlers failed, the claim was lost, or a handler left the transaction aborted.
 */
export class Rollback extends Error {
  constructor(
    readonly outcome: 'rolled_back' | 'lost' | 'aborted',
    readonly caught?: Error,
  ) {
    super(`transaction rolled back: ${outcome}`)
  }
}

/**
 * `pg`'s binding, whose transaction opens at its first statement, runs the done marker through `last`: on the pool,
 * alone, when nothing else ran in the transaction (one statement commits as a transaction of its own would).
 */
export interface LazyBinding<Db> extends PostgresBinding<Db> {
  last(db: Db, text: string, values: unknown[]): Promise<{ rowCount: number | null }>
}

function transactionAborted(caught: Error | undefined): TransactionAbortedError {
  const what = caught ? ` (${caught.message.split('\n')[0]})` : ''
  return new TransactionAbortedError(
    `a handler caught an SQL error inside context.db${what}, which left the transaction aborted, so nothing was committed; catch SQL errors inside a SAVEPOINT (ROLLBACK TO SAVEPOINT), or let them propagate`,
    { cause: caught },
  )
}

/**
 * Runs `work` (the event's handlers) with `context.db`, the library's handle of a transaction, then writes the done
 * marker (`marker`, one statement) in it if the claim's token still holds the event: committed with the handlers'
 * writes, or everything rolled back (`rolled_back` when a handler failed, `lost` when the marker found the claim
 * gone). The library rolls back whatever rejects inside its transaction.
 */
export async function runTransaction<Db>(
  binding: PostgresBinding<Db>,
  marker: { text: string; values: unknown[] },
  work: (context: BoundHandlerContext<Db>) => Promise<boolean>,
): Promise<TransactionOutcome> {
  const mark = (binding as Partial<LazyBinding<Db>>).last ?? binding.query
  try {
    return await binding.transaction(async (db): Promise<TransactionOutcome> => {
      if (!(await work({ db }))) throw new Rollback('rolled_back')
      let marked: { rowCount: number | null }
      try {
        marked = await mark.call(binding, db, marker.text, marker.values)
      } catch (error) {
        if (sqlStateOf(error) !== IN_FAILED_TRANSACTION) throw error
        throw new Rollback('aborted', binding.lastError?.(db))
      }
      if (marked.rowCount !== 1) throw new Rollback('lost')
      return 'committed'
    })
  } catch (error) {
    if (!(error instanceof Rollback)) throw error
    if (error.outcome === 'aborted') throw transactionAborted(error.caught)
    return error.outcome
  }
}
