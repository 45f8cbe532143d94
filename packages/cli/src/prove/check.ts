// What a check is, and the judging every check shares: statuses, the 10-second limit, the ledger's counts.
import { ANSWER_LIMIT_MS } from '@payhooks/core'
import type { Deliveries } from './deliveries.js'
import type { Sender } from './send.js'
import type { Answer, Ledger, Verdict } from './types.js'

/** What a check sends with. */
export interface ProveContext {
  sender: Sender
  deliveries: Deliveries
}

/** A verdict and what prove saw, in a few words. */
export interface Judgement {
  verdict: Verdict
  finding: string
}

/** What a check sent, and how to judge it once the ledger (when given) is read. */
export interface Sent {
  answers: Answer[]
  /** Event ids acknowledged that should have run handlers: the ledger is read until each shows a run, or the wait ends. */
  shouldRun?: string[]
  judge(ledger: Ledger | undefined): Judgement
}

/** One check of the series. */
export interface Check {
  id: string
  title: string
  /** Why it matters and how to fix it, one line. */
  advice: string
  run(ctx: ProveContext): Promise<Sent>
}

export const pass = (finding: string): Judgement => ({ verdict: 'PASS', finding })
export const warn = (finding: string): Judgement => ({ verdict: 'WARN', finding })
export const fail = (finding: string): Judgement => ({ verdict: 'FAIL', finding })

export const is2xx = (answer: Answer) => answer.status !== undefined && answer.status >= 200 && answer.status <= 299
/** 409 (being handled elsewhere) and 503 (busy, closing): "retry later", which the service's next hourly try does. */
export const isRetryLater = (answer: Answer) => answer.status === 409 || answer.status === 503
/** A 5XX that is not a "retry later": the receiver failed rather than decided. */
export const isError = (answer: Answer) =>
  answer.error !== undefined || (answer.status !== undefined && answer.status >= 500 && answer.status !== 503)

/** `401 missing_signature: …` or `no answer (ECONNRESET)`. */
export function answerText(answer: Answer): string {
  if (answer.status === undefined) return `no answer (${answer.reason})`
  return answer.reason === '' ? String(answer.status) : `${answer.status} ${answer.reason}`
}

/** Answers later than the service waits: the service counts them as failed deliveries and retries. */
export function late(answers: Answer[]): Answer[] {
  return answers.filter((answer) => answer.error === 'timeout' || answer.ms > ANSWER_LIMIT_MS)
}

/** A FAIL naming the 10-second limit when any answer came after it. */
export function limitJudgement(answers: Answer[]): Judgement | undefined {
  const over = late(answers)
  if (over.length === 0) return undefined
  const which = over.map((answer) =>
    answer.error === 'timeout'
      ? `${answer.label}: no answer after ${answer.ms} ms`
      : `${answer.label}: ${answer.ms} ms`,
  )
  return fail(`over the service's 10-second limit (${which.join('; ')}): the service counts it failed and retries`)
}

/** How many times the ledger says handlers ran for `eventId` (absent: 0). */
export function runs(ledger: Ledger, eventId: string): number {
  return ledger[eventId] ?? 0
}

/**
 * With a ledger: a FAIL when the acknowledged `eventId` did not run exactly once (0: the event is lost, as the
 * service will not send an acknowledged event again; 2 or more: it was handled twice).
 */
export function onceJudgement(ledger: Ledger | undefined, eventId: string, what: string): Judgement | undefined {
  if (!ledger) return undefined
  const count = runs(ledger, eventId)
  if (count === 1) return undefined
  if (count === 0) {
    return fail(`${what} was answered 2XX but the ledger shows its handlers never ran (${eventId}): a lost event`)
  }
  return fail(`${what} ran the handlers ${count} times (${eventId}): handled more than once`)
}

/** With a ledger: a FAIL when handlers ran for an event that was, and had to be, refused. */
export function neverJudgement(ledger: Ledger | undefined, eventId: string | undefined): Judgement | undefined {
  if (!ledger || eventId === undefined) return undefined
  const count = runs(ledger, eventId)
  return count === 0 ? undefined : fail(`refused, yet the ledger shows handlers ran ${count} time(s) for ${eventId}`)
}
