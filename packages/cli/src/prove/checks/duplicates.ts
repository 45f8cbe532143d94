// More than once (spec 6.1.4): the same event twice in a row and twice at once, and a copy of other bytes under
// the same event_id. Each is acknowledged or retried ("retry later": 409 or 503), never answered with an error,
// and with a ledger handled exactly once.
import {
  answerText,
  type Check,
  fail,
  is2xx,
  isRetryLater,
  type Judgement,
  onceJudgement,
  pass,
  warn,
} from '../check.js'
import type { Answer } from '../types.js'

const listed = (answers: Answer[]) => answers.map(answerText).join(' / ')

/** Both copies 2XX, or one 2XX and one "retry later"; anything else fails. */
function copiesJudgement(answers: Answer[]): Judgement {
  const acknowledged = answers.filter(is2xx).length
  const retried = answers.filter(isRetryLater).length
  if (acknowledged + retried < answers.length) return fail(`a copy got neither 2XX nor 409/503: ${listed(answers)}`)
  if (acknowledged === 0) return warn(`no copy acknowledged (${listed(answers)}): the service retries in an hour`)
  return pass(listed(answers))
}

export const twiceInARow: Check = {
  id: 'twice-in-a-row',
  title: 'same event twice in a row',
  advice:
    'the service delivers an event more than once. Fix: dedupe on event_id with a durable record, and answer a duplicate 2XX without running handlers again',
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const id = event.event_id as string
    const delivery = await deliveries.delivery('first copy', event)
    const first = await sender.send(delivery)
    const second = await sender.send({ ...delivery, label: 'second copy' })
    return {
      answers: [first, second],
      shouldRun: is2xx(first) ? [id] : [],
      judge(ledger) {
        if (!is2xx(first)) return fail(`the first copy was not acknowledged (${answerText(first)})`)
        const copies = copiesJudgement([first, second])
        return copies.verdict === 'FAIL' ? copies : (onceJudgement(ledger, id, 'the event sent twice') ?? copies)
      },
    }
  },
}

export const twiceAtOnce: Check = {
  id: 'twice-at-once',
  title: 'same event twice at once',
  advice:
    'two copies can arrive together, on two connections. Fix: claim the event_id atomically before running handlers (one copy runs, the other waits or gets 409), never a 500',
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const id = event.event_id as string
    const delivery = await deliveries.delivery('copy A', event)
    const answers = await sender.together([delivery, { ...delivery, label: 'copy B' }])
    return {
      answers,
      shouldRun: answers.some(is2xx) ? [id] : [],
      judge(ledger) {
        const copies = copiesJudgement(answers)
        if (copies.verdict === 'FAIL' || !answers.some(is2xx)) return copies
        return onceJudgement(ledger, id, 'the event sent twice at once') ?? copies
      },
    }
  },
}

export const otherBytes: Check = {
  id: 'same-id-other-bytes',
  title: 'a copy with other bytes under the same id',
  advice:
    'event_id is the de-duplication key; a second body under a handled id is a replay or a bug upstream. Fix: dedupe on event_id, not on the body, and log the conflict',
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const id = event.event_id as string
    const first = await sender.send(await deliveries.delivery('original', event))
    const data = event.data as Record<string, unknown>
    const other = { ...event, data: { ...data, settlement_amount: (data.settlement_amount as number) + 1 } }
    const second = await sender.send(await deliveries.delivery('other bytes', other))
    return {
      answers: [first, second],
      shouldRun: is2xx(first) ? [id] : [],
      judge(ledger) {
        if (!is2xx(first)) return fail(`the original was not acknowledged (${answerText(first)})`)
        const ran = onceJudgement(ledger, id, 'the event and its copy of other bytes')
        if (ran) return ran
        if (is2xx(second) || (second.status !== undefined && second.status >= 400 && second.status < 500))
          return pass(listed([first, second]))
        if (isRetryLater(second)) return pass(`${listed([first, second])} (the copy is retried)`)
        return fail(`the copy of other bytes got an error: ${answerText(second)}`)
      },
    }
  },
}

export const duplicateChecks = [twiceInARow, twiceAtOnce, otherBytes]
