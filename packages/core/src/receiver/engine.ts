import type { Alerts } from '../alerts/alerts.js'
import type { Bulkheads } from '../bulkheads/bulkheads.js'
import type { ParkState } from '../dead-letters/index.js'
import type { SlotState } from '../dispatch/index.js'
import type { Deadlines } from '../http/deadline.js'
import type { ProxyArrival } from '../http/proxy-arrival.js'
import type { JournalRecorder } from '../journal/index.js'
import type { PauseWatch } from '../pause/watch.js'
import type { WebhookQueue } from '../types.js'
import type { VerifyState } from '../verify/verify-and-parse.js'
import type { IncomingDelivery } from './delivery.js'

/**
 * One receiver's state, shared by verify-and-parse, dispatch, the deadline and `close`. Its tracked work (running
 * count, runs holding a claim, stopping) is owned by `claims` alone.
 */
export interface Engine extends VerifyState, SlotState, ParkState {
  /** Overrunning runs, and with `bulkheads` each event type's share of the slots and its quarantine. */
  readonly bulkheads: Bulkheads
  readonly queue: WebhookQueue | undefined
  readonly deadlineMs: number
  /** Where a trusted proxy says when the request reached it (`proxyArrival`), if configured. */
  readonly proxyArrival: ProxyArrival | undefined
  /** Set by `close`: its promise. */
  closing: Promise<void> | undefined
  /** Set by `drain`: health() reports not ready; deliveries are still handled. */
  draining: boolean
  /** Where answers to signed deliveries are journaled (`journal`), if configured. */
  readonly journal: JournalRecorder | undefined
  /** This process's copy of the pauses in force (`pauses`, by default kept in this process only). */
  readonly pauses: PauseWatch
  /** The alerts the receiver raises about itself; undefined with `alerts: false` (or none to watch). */
  alerts: Alerts | undefined
  /** Deliveries gone asynchronous, waiting for their deadline. */
  readonly deadlines: Deadlines<IncomingDelivery>
}
