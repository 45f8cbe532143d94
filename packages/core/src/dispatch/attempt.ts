import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { VerifiedSecret } from '../verify/secrets.js'

/** Whether the answer already went out (deadline overrun), so a later failure says so; and who observes it. */
export interface Attempt {
  readonly answered: boolean
  /** Telemetry of this delivery or dispatch: store calls and handlers run through it. */
  scope?: TelemetryScope | undefined
  /** Digest of the body the event came in (none for a queue worker's event): claimed with, and checked against. */
  digest?: string | undefined
  /** Which secret verified the event, for the handlers' context; undefined for a queue worker's dispatch. */
  verifiedWith?: VerifiedSecret | undefined
  /** A queue worker's `DispatchOptions.onOrderingKey`: told the event's ordering key before the claim. */
  onOrderingKey?: ((key: string) => void) | undefined
  /** Set once its handlers overran `maxRunMs`: the run is hung, and its slot's time says nothing of usual runs. */
  hung?: boolean
}
