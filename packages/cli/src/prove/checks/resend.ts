// The manual resend after an outage (spec 4, "Manually resend webhooks"): an event created 80 hours ago, past the
// service's 72 hours of retries. Handled, parked, or refused non-2XX with a reason; a 2XX that runs nothing loses it.
import { answerText, type Check, fail, is2xx, pass, runs, warn } from '../check.js'

/** How old the resent event is: past the 72 hours of hourly retries, as a resend after a long outage is. */
export const RESEND_AGE_HOURS = 80

export const resendAfterOutage: Check = {
  id: 'resend-80h',
  title: `event created ${RESEND_AGE_HOURS} h ago (manual resend)`,
  advice:
    'after an outage the operator resends events days old, once. Fix: handle it, park it in a dead-letter store, or refuse it non-2XX with a reason; never acknowledge it and drop it',
  async run({ sender, deliveries }) {
    const createdAt = new Date(Date.now() - RESEND_AGE_HOURS * 3_600_000).toISOString()
    const event = deliveries.event('transaction_settled', { createdAt })
    const id = event.event_id as string
    const answer = await sender.send(await deliveries.delivery('resend', event))
    // A kit receiver answers `{"status":"parked"}` for an event kept in its dead-letter store.
    const parked = answer.outcome === 'parked'
    return {
      answers: [answer],
      // A parked event runs no handler, so the ledger is not waited on for it.
      shouldRun: is2xx(answer) && !parked ? [id] : [],
      judge(ledger) {
        if (!is2xx(answer)) {
          if (answer.status === undefined) return fail(`no answer (${answer.reason})`)
          return answer.reason === ''
            ? warn(`refused ${answer.status} without a reason: say why, so the operator knows to replay it`)
            : pass(`refused with a reason: ${answerText(answer)}`)
        }
        if (ledger) {
          const count = runs(ledger, id)
          if (count === 1) return pass(`handled once: ${answerText(answer)}`)
          if (count > 1) return fail(`handled ${count} times (${id})`)
          if (parked) return pass(`parked, not run: ${answerText(answer)}`)
          return fail(
            `answered 2XX but the ledger shows its handlers never ran and it was not parked (${id}): a lost event`,
          )
        }
        if (parked) return pass(`parked: ${answerText(answer)}`)
        return warn(`acknowledged (${answerText(answer)}); handled or dropped? run with --ledger to tell`)
      },
    }
  },
}
