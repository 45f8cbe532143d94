/**
 * What a store's `transaction` rejects with when the handlers, not the store, kept it from committing: they
 * resolved, but left the transaction unable to commit (a handler caught an SQL error inside it, so PostgreSQL
 * refuses every later statement, the done marker included). The receiver reports it and answers it as a handler
 * failure: a {@link HandlerError} (500 `handler_failed`, the claim released, parked on the service's last tries)
 * whose `cause` is this error; not as a store failure.
 *
 * @example
 * // In a store's transaction(), when the done marker's UPDATE fails with SQLSTATE 25P02:
 * throw new TransactionAbortedError('a handler caught an SQL error inside context.db ...', { cause: caught })
 */
export class TransactionAbortedError extends Error {
  override name = 'TransactionAbortedError'
  /** Always `'transaction_aborted'`: how the receiver recognises it, whichever copy of core made it. */
  readonly code = 'transaction_aborted'
}

/** Whether `error` is a {@link TransactionAbortedError}, by its `code`. */
export function isTransactionAborted(error: unknown): boolean {
  return error instanceof Error && (error as { code?: unknown }).code === 'transaction_aborted'
}
