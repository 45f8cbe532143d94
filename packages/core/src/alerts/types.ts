/** The alerts a receiver raises about itself. */
export type AlertName =
  | 'silence'
  | 'signature_failures'
  | 'dead_letters_growing'
  | 'handlers_hung'
  | 'store_memory'
  | 'journal_dropping'
  | 'subscription'

/** `critical`: deliveries are refused or about to be; `warning`: something needs a look soon. */
export type AlertSeverity = 'critical' | 'warning'

/**
 * One alert, as `onAlert` listeners, the log, telemetry, `health()` and the board see it: raised once
 * (`firing: true`), then resolved once (`firing: false`, with `resolvedAt`). Its message is one line of fixed text
 * and figures: never a value from a body, a secret or a driver's error text.
 */
export interface Alert {
  readonly name: AlertName
  readonly severity: AlertSeverity
  /** True when raised; false when resolved. */
  readonly firing: boolean
  /** Since when the condition holds (as far as the receiver can tell), not when it was noticed. */
  readonly since: Date
  /** When it was resolved; only on `firing: false`. */
  readonly resolvedAt?: Date
  /** One line: what is wrong and what to look at. */
  readonly message: string
  /** The event type it is about: a `silence` of one type, a `subscription` missing one. */
  readonly eventType?: string
  /** `signature_failures`: the labels (or `#index` of unlabeled ones) of the secrets every delivery was tried with. */
  readonly secretLabels?: readonly string[]
}

/** A listener registered with `onAlert`. */
export type AlertListener = (alert: Alert) => void

/** `silence`: no verified delivery for a while. */
export interface SilenceAlertOptions {
  /**
   * Raised when no delivery verified for this long (overall, across every type). Resolved by the next one.
   * @default none: only the types of `types` are watched
   */
  silenceMs?: number
  /** Per event type: raised when none of that type verified for this long. */
  types?: Readonly<Record<string, number>>
}

/** `signature_failures`: a run of deliveries that fail verification. */
export interface SignatureFailuresAlertOptions {
  /**
   * Raised after this many deliveries in a row whose signature matched no secret (nothing verified in between):
   * likely a secret rotated in the service's portal and not here. Resolved by the next delivery that verifies.
   * @default 10
   */
  after?: number
}

/** `dead_letters_growing`: parked letters piling up. */
export interface DeadLettersGrowingAlertOptions {
  /**
   * Raised when the parked letters grew by at least this many within `windowMs`.
   * @default 10
   */
  growth?: number
  /**
   * The window. Resolved once the count has not grown over a whole window.
   * @default 900_000 (15 minutes)
   */
  windowMs?: number
  /**
   * How often the dead-letter store is counted (one `count` call).
   * @default 60_000
   */
  everyMs?: number
}

/** `handlers_hung`: handlers running past `maxRunMs`, ignoring their signal. */
export interface HandlersHungAlertOptions {
  /**
   * Raised while at least this many runs are hung; resolved when fewer are.
   * @default 1
   */
  count?: number
}

/** `store_memory`: Redis near `maxmemory`, or refusing writes for lack of memory. */
export interface StoreMemoryAlertOptions {
  /**
   * How often the stores' memory checks (those of `health()`, shared with readiness probes) are read.
   * @default 30_000
   */
  everyMs?: number
}

/** `journal_dropping`: the journal's buffer full, answers dropped. */
export interface JournalDroppingAlertOptions {
  /**
   * Resolved once no answer was dropped for this long.
   * @default 60_000
   */
  quietMs?: number
}

/** The part of the service's subscription API the `subscription` alert reads (`createClient` of `@payhooks/client`). */
export interface SubscriptionReader {
  readonly subscriptions: {
    get(
      id: string,
      options?: { signal?: AbortSignal },
    ): Promise<{ readonly url: string; readonly event_types: readonly string[]; readonly is_active: boolean }>
  }
}

/** `subscription`: the service's subscription, checked against this receiver. */
export interface SubscriptionAlertOptions {
  /** A client of the subscription API with its credentials: `createClient({ baseUrl, auth })` of `@payhooks/client`. */
  client: SubscriptionReader
  /** The subscription's id (`wsub_...`). */
  id: string
  /**
   * This receiver's public url: raised when the subscription's is another.
   * @default none: the url is not compared
   */
  url?: string
  /**
   * How often the subscription is read (one GET).
   * @default 300_000 (5 minutes)
   */
  everyMs?: number
}

/**
 * `createWebhooks({ alerts })`: each alert's thresholds, or `false` to turn it off. `alerts: false` turns them all
 * off. Every alert goes to `onAlert` listeners, the log, telemetry (`alert`), `health()` (an `alert_<name>` check while
 * firing) and the board's overview.
 *
 * @example
 * createWebhooks({
 *   secret,
 *   alerts: { silence: { silenceMs: 3_600_000 }, signatureFailures: { after: 5 }, journalDropping: false },
 * })
 */
export interface AlertsOptions {
  /** @default off: give `silenceMs` or `types` */
  silence?: SilenceAlertOptions | false
  /** @default on, `{ after: 10 }` */
  signatureFailures?: SignatureFailuresAlertOptions | false
  /** @default on with a dead-letter store that can count */
  deadLettersGrowing?: DeadLettersGrowingAlertOptions | false
  /** @default on, `{ count: 1 }` */
  handlersHung?: HandlersHungAlertOptions | false
  /** @default on: read from the stores' `*_memory` health checks (Redis) */
  storeMemory?: StoreMemoryAlertOptions | false
  /** @default on with a journal */
  journalDropping?: JournalDroppingAlertOptions | false
  /** @default off: give the client, the id and the url */
  subscription?: SubscriptionAlertOptions | false
  /**
   * How often the in-process conditions (silence, signature failures, hung handlers, journal drops) are looked at.
   * Alerts are checked on an unref'd timer, never on the path of a delivery.
   * @default 5_000
   */
  checkEveryMs?: number
}
