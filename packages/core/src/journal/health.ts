import type { HealthCheck } from '../health/types.js'
import type { JournalRecorder } from './recorder.js'

/** How long an answer dropped by the full buffer keeps the journal's check failed. */
export const DROP_SHOWN_MS = 60_000

const FIX =
  'see why the journal cannot be written (is its Redis or PostgreSQL reachable, the table migrated: payhooks migrate --postgres)'

/**
 * The journal in `health()`: a warning, never an error (the journal is an account kept off the delivery path, so a
 * failing one leaves the receiver ready), failed while the last batch written was refused or the full buffer
 * dropped answers in the last minute.
 */
export function journalCheck(recorder: JournalRecorder, now = Date.now()): HealthCheck {
  const { writeFailed, droppedAt } = recorder.trouble()
  const dropped = now - droppedAt < DROP_SHOWN_MS
  if (!writeFailed && !dropped) return { name: 'journal', ok: true, severity: 'warning' }
  const why = [
    writeFailed && 'its last write was refused',
    dropped && 'answers were dropped in the last minute (its buffer was full)',
  ].filter(Boolean)
  return {
    name: 'journal',
    ok: false,
    severity: 'warning',
    detail: `journal: ${why.join('; ')}; deliveries are unaffected, their answers are missing from webhooks.events`,
    fix: FIX,
  }
}

/** A journal's own checks (its `health()`), as warnings: they never make the receiver unready. */
export const asWarnings = (checks: HealthCheck[]): HealthCheck[] =>
  checks.map((check) => ({ ...check, severity: 'warning' }))
