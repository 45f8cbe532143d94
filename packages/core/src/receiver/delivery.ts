import type { SlotAttempt, SlotWaiter } from '../dispatch/index.js'
import type { WebhookError } from '../errors/index.js'
import type { Pending } from '../http/deadline.js'
import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { RawDelivery, VerifiedEvent, WebhookResult } from '../types.js'
import type { VerifiedSecret } from '../verify/secrets.js'

/**
 * Where a delivery stands. `reading`: its body is still arriving. `processing`: verify, then queue or dispatch.
 * Then one of: `answered` (its work settled in time), `timed_out` (the deadline passed during the read: answered
 * 408, nothing of it runs), `expired` (the deadline passed during the work: answered 503, the work goes on and
 * is counted out when it settles).
 */
export type Phase = 'reading' | 'processing' | 'answered' | 'timed_out' | 'expired'

/** How a delivery ended when not in failure, for telemetry. */
export type DeliveryOutcome = 'processed' | 'duplicate' | 'queued' | 'parked' | 'in_progress' | 'paused'

/**
 * A delivery under way: its phase, the event once parsed, and for telemetry how it ended (`outcome` when it
 * succeeded, `error` when it failed or was parked). Every field is set in the constructor, so every delivery has
 * one hidden class; the deadline list's links are among them.
 */
export class IncomingDelivery implements SlotAttempt, Pending {
  phase: Phase
  readonly raw: RawDelivery
  readonly scope: TelemetryScope | undefined
  /** Answers the caller; set once the delivery went asynchronous. */
  resolve: ((result: WebhookResult) => void) | undefined = undefined
  event: VerifiedEvent | undefined = undefined
  outcome: DeliveryOutcome | undefined = undefined
  error: WebhookError | undefined = undefined
  /** Set once a secret verified the body. */
  verifiedWith: VerifiedSecret | undefined = undefined
  /** The body's digest, claimed with. */
  digest: string | undefined = undefined
  /** Set while waiting for a slot, so the deadline can withdraw the wait. */
  waiting: SlotWaiter | undefined = undefined
  /** Set once its handlers overran `maxRunMs`. */
  hung = false
  due = 0
  prev: Pending | undefined = undefined
  next: Pending | undefined = undefined
  linked = false

  constructor(raw: RawDelivery, scope: TelemetryScope | undefined, phase: 'reading' | 'processing') {
    this.raw = raw
    this.scope = scope
    this.phase = phase
  }

  /** Whether the answer went out: a handler failure from now on is only reported. */
  get answered(): boolean {
    return this.phase !== 'reading' && this.phase !== 'processing'
  }
}
