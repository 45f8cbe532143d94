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
   * a handled event is recognised.
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
}
