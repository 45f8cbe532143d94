/** The store calls a receiver makes, as `TelemetryScope.store` names them. */
export type StoreOperation = 'init' | 'claim' | 'extend' | 'complete' | 'release' | 'transaction' | 'enqueue' | 'park'

/** A dead-letter store's calls, as a `StoreError` names them (`dead-letter park`...). */
export type DeadLetterOperation = 'init' | 'park' | 'get' | 'list' | 'mark' | 'delete' | 'count' | 'shutdown'

/**
 * What a `StoreError` says failed: a store call the receiver makes (the names telemetry's
 * `TelemetryScope.store` uses), the store's `shutdown`, a dead-letter store's call, or a queue's connection.
 */
export type StoreErrorOperation =
  | StoreOperation
  | 'shutdown'
  | `dead-letter ${DeadLetterOperation}`
  | 'queue connection'
  | 'worker connection'
  | 'worker'
  | 'held keys'
  | 'journal shutdown'
  | `pause ${'write' | 'remove' | 'read'}`
