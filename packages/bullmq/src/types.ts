/** How many finished jobs BullMQ keeps. Both limits apply when both are set. */
export interface JobRetention {
  /** Jobs older than this are removed (best effort: when a later job finishes). */
  maxAgeMs?: number
  /** At most this many jobs are kept. */
  maxCount?: number
}

/** How {@link BullmqQueueOptions.batch} groups enqueues. */
export interface EnqueueBatchOptions {
  /**
   * Most jobs in one `addBulk`; a batch that reaches it is sent at once, before the end of the turn.
   * @default 100
   */
  maxSize?: number
}
