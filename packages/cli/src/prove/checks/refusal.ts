// The judging of input that must not be acknowledged (unsigned, mis-signed, malformed, oversized): shared by the
// signature and the input checks.
import { answerText, fail, is2xx, isError, type Judgement, neverJudgement, pass, type Sent, warn } from '../check.js'
import type { Answer } from '../types.js'

/**
 * Any 2XX fails with `acknowledged`; with a ledger, a handler run for it fails; an error (5XX, no status) warns.
 * With `fastMs`, a refusal slower than that warns: bad input needs no handler, store or network.
 */
export function refusal(answer: Answer, acknowledged: string, { fastMs }: { fastMs?: number } = {}): Sent {
  return {
    answers: [answer],
    judge(ledger): Judgement {
      if (is2xx(answer)) return fail(acknowledged)
      const ran = neverJudgement(ledger, answer.eventId)
      if (ran) return ran
      if (answer.status === undefined) {
        return warn(`closed without an answer (${answer.reason}) in ${answer.ms} ms: a 4XX says why`)
      }
      if (isError(answer)) return warn(`refused, but with an error (${answerText(answer)}): say why with a 4XX`)
      if (fastMs !== undefined && answer.ms > fastMs) {
        return warn(`refused, but slowly (${answer.ms} ms, over ${fastMs} ms): ${answerText(answer)}`)
      }
      return pass(`refused: ${answerText(answer)}`)
    },
  }
}
