import { releaseClaim } from '../dispatch/index.js'
import { ClosingError, StoreError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import type { Engine } from './engine.js'

/**
 * Waits for running work and the stores' health checks under way (told to stop), at most `timeoutMs`; then aborts
 * the signals of handlers still running and releases their claims, so the service's retry runs those events; then
 * shuts the stores down. Nothing of the receiver's own touches a store after.
 */
export async function shutDown(
  engine: Engine,
  timeoutMs: number,
  settleHealth: (timeoutMs: number) => Promise<void>,
): Promise<void> {
  await Promise.all([engine.claims.idle(timeoutMs), settleHealth(timeoutMs)])
  engine.slots?.stop(new ClosingError())
  await engine.claims.cancelAll(new ClosingError(), (run) => releaseClaim(engine, run))
  await engine.journal?.flush()
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
