import type { JournalRecorder } from '../journal/index.js'
import { duration, type Watch } from './watch.js'

/**
 * `journal_dropping`: the journal's recorder dropped answers (its buffer full: the journal down or too slow);
 * resolved once none was dropped for `quietMs`.
 */
export function journalDroppingWatch(recorder: JournalRecorder, quietMs: number): Watch {
  let since: number | undefined
  return {
    name: 'journal_dropping',
    check(now) {
      const { droppedAt } = recorder.trouble()
      if (!(now - droppedAt < quietMs)) {
        since = undefined
        return []
      }
      since ??= droppedAt
      return [
        {
          severity: 'warning',
          since,
          message: `the journal dropped answers in the last ${duration(quietMs)}, its buffer full: is the journal's store up and fast enough? Deliveries are unaffected`,
        },
      ]
    },
  }
}
