/**
 * One named check of {@link Webhooks.health}. Its `detail` and `fix` are fixed text written by payhooks or a
 * store: never a secret, a connection string, a host name or the text of a driver's error.
 */
export interface HealthCheck {
  /** What was checked, in snake_case: `closing`, `event_slots`, `store`, `redis_maxmemory_policy`, `postgres_migration_004`... */
  name: string
  /** Whether it passed. */
  ok: boolean
  /**
   * How much a failure matters: `error` makes the report not `ready`; `warning` is logged and shown but leaves
   * readiness alone (a Redis that may evict keys still answers).
   * @default 'error'
   */
  severity?: 'error' | 'warning'
  /** One line saying what was found. */
  detail?: string
  /** One line saying how to fix a failed check. */
  fix?: string
  /** How long the backend took to answer, for a reachability check. */
  latencyMs?: number
}

/** What {@link Webhooks.health} resolves to. */
export interface HealthReport {
  /** True when no check of severity `error` failed: the instance may be sent deliveries. */
  ready: boolean
  checks: HealthCheck[]
}

/** Options of {@link Webhooks.health}. */
export interface HealthOptions {
  /**
   * Longest the report waits for the stores' checks; a store that has not answered by then is reported failed
   * (`no answer within ... ms`), so the report never hangs.
   * @default 2000
   */
  timeoutMs?: number
  /**
   * How long a check of the stores is reused: a call within `maxAgeMs` of the start of the last one (with the same
   * `timeoutMs`) shares its result, or waits for it while it runs, instead of asking the backend again. Readiness
   * probes then cost the backend one check per `maxAgeMs`, however many arrive, and still see an outage within
   * `maxAgeMs` plus the time the check takes to fail (at most `timeoutMs`). The receiver's own checks (`closing`,
   * `draining`, `event_slots`) are read afresh at every call. `0` checks the stores afresh.
   * @default 1000
   */
  maxAgeMs?: number
}
