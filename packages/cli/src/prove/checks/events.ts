// Deliveries as the service makes them (spec 6.1): each built-in event type acknowledged, an unknown type answered.
import { sampleEventTypes } from '@payhooks/testing'
import { answerText, type Check, fail, is2xx, isError, onceJudgement, pass, warn } from '../check.js'

/** A signed sample of `eventType`: 2XX, and with a ledger, handlers run exactly once. */
function validEvent(eventType: string): Check {
  return {
    id: `valid-${eventType}`,
    title: `valid ${eventType}`,
    advice:
      'a delivery counts only when answered 2XX within 10 s; otherwise the service retries hourly, then gives up after 72 h. Fix: answer 2XX once handlers succeeded or the event is durably queued',
    async run({ sender, deliveries }) {
      const event = deliveries.event(eventType)
      const id = event.event_id as string
      const answer = await sender.send(await deliveries.delivery(eventType, event))
      return {
        answers: [answer],
        shouldRun: is2xx(answer) ? [id] : [],
        judge(ledger) {
          if (!is2xx(answer)) return fail(`not acknowledged (${answerText(answer)}): the service would retry it`)
          return onceJudgement(ledger, id, 'the event') ?? pass(`acknowledged: ${answerText(answer)}`)
        },
      }
    },
  }
}

/** The sample event types of @payhooks/testing: every type whose body the spec shows. */
export const validEventChecks: Check[] = sampleEventTypes.map(validEvent)

export const unknownType: Check = {
  id: 'unknown-type',
  title: 'unknown event type',
  advice:
    'a subscription can carry types added after your code (the spec lists more than it shows). Fix: acknowledge types you do not handle, or refuse them with a 4XX on purpose; never crash',
  async run({ sender, deliveries }) {
    const event = deliveries.event('prove_unknown_type')
    const answer = await sender.send(await deliveries.delivery('unknown type', event))
    return {
      answers: [answer],
      judge() {
        if (is2xx(answer)) return pass(`acknowledged: ${answerText(answer)}`)
        if (isError(answer)) return fail(`an error on a type it does not know (${answerText(answer)})`)
        return warn(`refused (${answerText(answer)}): the service retries it hourly for 72 h, then drops it`)
      },
    }
  },
}
