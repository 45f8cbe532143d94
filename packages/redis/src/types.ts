/** Options of `redisStore`. */
export interface RedisStoreOptions {
  /**
   * Prepended to every event id to form its key (after the client's own `keyPrefix`, if any). Give
   * each receiver fleet its own prefix; the store owns every key under it.
   * @default 'payhooks:'
   */
  keyPrefix?: string
  /**
   * How long a done marker is kept. At least the service's 72-hour retry window, so every retry of
   * a handled event is recognised. The receiver's `maxEventAgeMs` follows it: keep it as long as the
   * oldest manual resend you want handled after an outage (7 days: `7 * 24 * 3_600_000`).
   * @default 262_800_000 (73 hours)
   */
  retentionMs?: number
  /**
   * Longest a store call waits, for the connection to be ready plus the reply, before it rejects (so
   * the receiver answers 503 well within its deadline). Commands are never left in the client's
   * offline queue: while the connection is down, calls wait for it up to this long and then reject
   * without having sent anything.
   * @default 1000
   */
  commandTimeoutMs?: number
  /**
   * How long a rolling upgrade from an earlier release (one key per handled event) may run on this prefix: for this
   * long after the first instance of this release started beside keys of the earlier one, instances also leave what
   * the earlier release reads (a handled event's key turned into its done marker, a mark in its fence hash), so that
   * no earlier instance runs an event twice or out of order. Finish the rollout within it. A prefix holding no keys
   * when this release first starts on it has no window.
   * @default 3_600_000 (1 hour)
   */
  rolloutMs?: number
}

/** Options of `redisDeadLetterStore`. */
export interface RedisDeadLetterStoreOptions {
  /**
   * Prepended to every key of the store (after the client's own `keyPrefix`, if any); the store owns every key
   * under it. On a Redis Cluster it must hold a hash tag, such as `{shop-dead-letters}:`, so the store's keys
   * share one slot.
   * @default '{payhooks-dead-letters}:'
   */
  keyPrefix?: string
  /**
   * How long a replayed letter is kept (for `list({ status: 'replayed' })`, and so a second replay reads as a
   * duplicate). Parked letters have no expiry.
   * @default 604_800_000 (7 days)
   */
  replayedRetentionMs?: number
  /**
   * Longest a call waits, for the connection to be ready plus the reply, before it rejects (parking then fails
   * and the delivery is answered non-2XX, as without dead letters).
   * @default 1000
   */
  commandTimeoutMs?: number
}

/** Options of `redisJournal`. */
export interface RedisJournalOptions {
  /**
   * Prepended to every key of the journal (after the client's own `keyPrefix`, if any); the journal owns every key
   * under it. On a Redis Cluster leave hash tags out of it: the journal spreads its keys over slots on purpose.
   * @default 'payhooks-journal:'
   */
  keyPrefix?: string
  /**
   * How long an answer is kept (every key expires by TTL). At least the service's 72 hours.
   * @default 604_800_000 (7 days)
   */
  retentionMs?: number
  /**
   * How many shards the answers are spread over (by a hash of the event id), each its own streams, index and counts
   * under a hash tag of its own, so a Cluster shares the writes among its nodes; a list or counts reads each. 1 to 256.
   * @default 16
   */
  shards?: number
  /**
   * The most answers kept per event (the service retries hourly for 72 hours: 72 answers and their duplicates).
   * @default 200
   */
  maxAnswersPerEvent?: number
  /**
   * Longest a write or read waits, for the connection to be ready plus the reply, before it rejects (a write's
   * batch is then dropped and logged; deliveries never wait for it, so this may be longer than a store's).
   * @default 5000
   */
  commandTimeoutMs?: number
}

/** Options of `redisPauseStore`. */
export interface RedisPauseStoreOptions {
  /**
   * Prepended to the store's one key, `<keyPrefix>pauses` (after the client's own `keyPrefix`, if any). Give each
   * receiver fleet its own.
   * @default 'payhooks-pauses:'
   */
  keyPrefix?: string
  /**
   * How often each receiver reads the pauses again (one `HGETALL`): a pause reaches every instance within about this.
   * From 10 to 60 000.
   * @default 1000
   */
  refreshMs?: number
  /**
   * Longest a call waits, for the connection to be ready plus the reply, before it rejects.
   * @default 1000
   */
  commandTimeoutMs?: number
}
