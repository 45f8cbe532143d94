import type { DeadLetterStore, DeadLetters } from '@payhooks/core'

type MaybePromise<T> = T | Promise<T>

/**
 * Makes the dead-letter store under test. Every test calls it with a fresh `namespace` (its own empty slice: a
 * key prefix, a table, …); calls with the same namespace must return stores that share their letters, like the
 * instances of one receiver fleet (a store that lives in one process returns the same instance again).
 */
export type DeadLetterStoreFactory = (namespace: string) => MaybePromise<DeadLetterStore>

/** A signed event of the contract, as a test hands it to {@link DeadLetterSubject.park}. */
export interface ContractEvent {
  event_id: string
  event_type: string
  [field: string]: unknown
}

/**
 * Dead letters under test through the {@link DeadLetters} interface tools use (list, get, replay), with a way to
 * make some: for a queue whose dead letters are its failed jobs, where a store's `park` does not fit.
 */
export interface DeadLetterSubject {
  deadLetters: DeadLetters
  /**
   * Makes `event` a dead letter whose reason contains `reason`, as a handler failure, and resolves once
   * `deadLetters.get` finds it. From then on the event's handlers succeed.
   */
  park(event: ContractEvent, reason: string): Promise<void>
  /** How many times the handlers of `eventId` ran and succeeded. */
  runs(eventId: string): number
  /** Resolves once the work replays handed on (a queue's jobs) has finished. @default nothing to wait for */
  settle?(): Promise<void>
  /** Closes what the subject opened, after each test. */
  close?(): Promise<void>
}

/** Makes a {@link DeadLetterSubject} in a fresh `namespace` for each test. */
export type DeadLetterSubjectFactory = (namespace: string) => MaybePromise<DeadLetterSubject>

/** Instances of one store fleet in one namespace: `instance(i)` is made (and `init`ed) on first use. */
export type Fleet = (index?: number) => Promise<DeadLetterStore>
