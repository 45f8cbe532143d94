import type { AlertName, AlertSeverity } from './types.js'

/** A condition a watch found holding now. */
export interface Finding {
  readonly severity: AlertSeverity
  /** Since when it holds (ms). */
  readonly since: number
  /** One line of fixed text and figures. */
  readonly message: string
  /** Tells apart findings of one watch: each type's silence, each type a subscription lacks. */
  readonly eventType?: string
  readonly secretLabels?: readonly string[]
}

/**
 * One alert's check, run on the alerts' timer: what holds now (an empty list: nothing), or undefined when it could
 * not tell (a store that did not answer): the alert then stays as it was.
 */
export interface Watch {
  readonly name: AlertName
  /** How often it runs; undefined: at every tick (`checkEveryMs`). */
  readonly everyMs?: number
  check(now: number, signal: AbortSignal): readonly Finding[] | undefined | Promise<readonly Finding[] | undefined>
}

/** `ms` as the largest whole unit: `90 s`, `15 min`, `3 h`. */
export function duration(ms: number): string {
  if (ms >= 7_200_000) return `${Math.round(ms / 3_600_000)} h`
  if (ms >= 120_000) return `${Math.round(ms / 60_000)} min`
  return `${Math.round(ms / 1000)} s`
}
