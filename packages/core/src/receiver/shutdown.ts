import { ClosingError, StoreError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import type { Engine } from './engine.js'

/** How long, at most, `close` waits past its timeout for handlers that stop on their aborted signal. */
export const CLOSE_ABORT_GRACE_MS = 1000

/**
 * Waits for running work (done markers retried included) and the stores' health checks under way (told to stop), at
 * most `timeoutMs`; then aborts the signals of handlers still running, and gives those that stop on it a moment
 * (`timeoutMs`, at most {@link CLOSE_ABORT_GRACE_MS}) to settle. A run still going after that keeps its claim,
 * renewed, until it settles or the process ends: nothing runs its event beside it. The stores are shut down once no
 * work is left: now, or (without holding the promise) when the last run settles, its done marker written or its
 * failure released or parked.
 */
export async function shutDown(
  engine: Engine,
  timeoutMs: number,
  settleHealth: (timeoutMs: number) => Promise<void>,
): Promise<void> {
  const claims = engine.claims
  engine.pauses.stop()
  await Promise.all([claims.idle(timeoutMs), settleHealth(timeoutMs), engine.alerts?.stop(timeoutMs)])
  engine.slots?.stop(new ClosingError())
  engine.bulkheads.stop(new ClosingError())
  claims.stop(new ClosingError())
  await claims.idle(Math.min(timeoutMs, CLOSE_ABORT_GRACE_MS))
  if (claims.busy) {
    void claims.idle().then(() => closeStores(engine))
    return
  }
  await closeStores(engine)
}

/** Flushes the journal, then shuts down the journal, the store and the dead-letter store; failures are reported. */
async function closeStores(engine: Engine): Promise<void> {
  await engine.journal?.close()
  try {
    await engine.journal?.journal.shutdown?.()
  } catch (cause) {
    report(engine.eventHandler, new StoreError('journal shutdown', cause))
  }
  try {
    await engine.store.shutdown?.()
  } catch (cause) {
    report(engine.eventHandler, new StoreError('shutdown', cause))
  }
  try {
    await engine.deadLetters?.shutdown?.()
  } catch (cause) {
    report(engine.eventHandler, new StoreError('dead-letter shutdown', cause))
  }
  engine.deadlines.stop()
}
