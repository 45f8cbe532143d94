// Every answer of the run against the service's 10-second limit (spec 6.1.2 and 8).
import { ANSWER_LIMIT_MS } from '@payhooks/core'
import { fail, type Judgement, late, pass, warn } from './check.js'
import type { Answer } from './types.js'

/** Over this, an answer passes but leaves little room for a slow network or a busy moment. */
export const MARGIN_MS = ANSWER_LIMIT_MS / 2

export const deadlineCheck = {
  id: 'ten-second-limit',
  title: 'every answer within 10 s',
  advice:
    'the service counts an answer after 10 s as failed and retries, even if the event was handled. Fix: answer within the limit whatever the handlers do (the kit: deadlineMs), and queue slow work',
}

/** The slowest answer of the run, and a FAIL naming the limit for each answer past it. */
export function deadlineJudgement(answers: Answer[]): Judgement {
  const over = late(answers)
  if (over.length > 0) {
    const which = over.map(
      (answer) => `${answer.label} (${answer.error === 'timeout' ? 'no answer after ' : ''}${answer.ms} ms)`,
    )
    return fail(`${over.length} answer(s) after the 10-second limit: ${which.join(', ')}`)
  }
  const slowest = answers.reduce<Answer | undefined>(
    (max, answer) => (!max || answer.ms > max.ms ? answer : max),
    undefined,
  )
  if (!slowest) return pass('no answers')
  const text = `slowest ${slowest.ms} ms (${slowest.label})`
  return slowest.ms > MARGIN_MS ? warn(`${text}: over half the limit`) : pass(text)
}
