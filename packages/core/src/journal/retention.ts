import { RETRY_WINDOW_MS } from '../service-contract.js'
import { inRange } from '../validations.js'

/** How long journals keep an answer by default: 7 days, past the service's 72 hours of retries and a week's resends. */
export const DEFAULT_JOURNAL_RETENTION_MS = 7 * 24 * 3_600_000

/** A journal's `retentionMs` option checked (at least the service's 72 hours), with its default. */
export const journalRetention = (retentionMs: number | undefined, where: string): number =>
  inRange(
    retentionMs ?? DEFAULT_JOURNAL_RETENTION_MS,
    where,
    'retentionMs',
    { min: RETRY_WINDOW_MS },
    'the service retries for 72 hours',
  )
