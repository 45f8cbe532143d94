import { releaseClaim } from '../dispatch/index.js'
import { ClosingError, StoreError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import type { Engine } from './engine.js'

/**
 * Waits for running work, at most `timeoutMs`; then aborts the signals of handlers still running and releases
 * their claims, so the service's retry runs those events; then shuts the store down.
 */
export async function shutDown(engine: Engine, timeoutMs: number): Promise<void> {
  await engine.claims.idle(timeoutMs)
  engine.slots?.stop(new ClosingError())
  await engine.claims.cancelAll(new ClosingError(), (run) => releaseClaim(engine, run))
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
