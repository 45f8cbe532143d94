// Runs the fixed series of checks against one receiver, then judges each (with the ledger when given), and deletes
// the dead letters the run caused when it can reach them.
import type { DeadLetters } from '@payhooks/core'
import { type Check, limitJudgement } from './check.js'
import { duplicateChecks } from './checks/duplicates.js'
import { unknownType, validEventChecks } from './checks/events.js'
import { inputChecks } from './checks/input.js'
import { resendAfterOutage } from './checks/resend.js'
import { signatureChecks } from './checks/signature.js'
import { deadlineCheck, deadlineJudgement } from './deadline.js'
import { Deliveries } from './deliveries.js'
import { LEDGER_WAIT_MS, LedgerError, readLedger, settledLedger } from './ledger.js'
import { deleteLetters, type LettersReport } from './letters.js'
import { type OnceOnly, onceOnly } from './once-only.js'
import { GIVE_UP_MS, Sender, Unreachable } from './send.js'
import type { Answer, CheckResult, Ledger } from './types.js'

/** The series, in the order sent. */
export const checks: readonly Check[] = [
  ...signatureChecks,
  ...validEventChecks,
  ...duplicateChecks,
  resendAfterOutage,
  unknownType,
  ...inputChecks,
]

export interface ProveOptions {
  url: string
  secret: string
  /** GET returning `{ event_id: runs }`. */
  ledgerUrl?: string
  /** @default {@link LEDGER_WAIT_MS} */
  ledgerWaitMs?: number
  /** @default {@link GIVE_UP_MS} */
  giveUpMs?: number
  /** The receiver's dead letters (`--module`): the letters of the run found there are deleted at its end. */
  deadLetters?: DeadLetters
}

export interface ProveReport {
  url: string
  ledger?: string
  /** Every event id of the run starts `evt_prove_<run>_`. */
  run: string
  checks: CheckResult[]
  requests: number
  ms: number
  summary: { pass: number; warn: number; fail: number }
  /** Whether `--ledger`'s once-only check ran over the whole run, and passed. */
  onceOnly: OnceOnly
  /** The dead letters the run caused: deleted, or left behind. */
  letters: LettersReport
}

/**
 * Sends the series to `options.url` and judges it. Rejects with `Unreachable` when the first request gets no answer
 * at all or the ledger cannot be read before the run, and with `LedgerError` when it cannot be read after.
 */
export async function prove(options: ProveOptions): Promise<ProveReport> {
  const started = performance.now()
  // Read once first: a wrong ledger URL is found before anything is sent.
  if (options.ledgerUrl) {
    await readLedger(options.ledgerUrl).catch((error: unknown) => {
      throw error instanceof LedgerError ? new Unreachable(error.message) : error
    })
  }
  const sender = new Sender(options.url, options.giveUpMs ?? GIVE_UP_MS)
  const deliveries = new Deliveries(options.secret)
  const sent = []
  for (const check of checks) sent.push({ check, ...(await check.run({ sender, deliveries })) })
  let ledger: Ledger | undefined
  const shouldRun = sent.flatMap((s) => s.shouldRun ?? [])
  if (options.ledgerUrl) {
    ledger = await settledLedger(options.ledgerUrl, shouldRun, options.ledgerWaitMs ?? LEDGER_WAIT_MS)
  }
  const letters = await runLetters(sender.answers, options.deadLetters)
  const results: CheckResult[] = sent.map(({ check, answers, judge }) => ({
    id: check.id,
    title: check.title,
    ...(limitJudgement(answers) ?? judge(ledger)),
    answers,
    advice: check.advice,
  }))
  results.push({ ...deadlineCheck, ...deadlineJudgement(sender.answers), answers: [] })
  const count = (verdict: string) => results.filter((result) => result.verdict === verdict).length
  return {
    url: options.url,
    ...(options.ledgerUrl ? { ledger: options.ledgerUrl } : {}),
    run: deliveries.run,
    checks: results,
    requests: sender.answers.length,
    ms: Math.round(performance.now() - started),
    summary: { pass: count('PASS'), warn: count('WARN'), fail: count('FAIL') },
    onceOnly: onceOnly(ledger, sender.answers, shouldRun),
    letters,
  }
}

/** The run's letters: looked up and deleted in `deadLetters` when given, else what the answers said was parked. */
async function runLetters(answers: Answer[], deadLetters: DeadLetters | undefined): Promise<LettersReport> {
  const ids = [...new Set(answers.flatMap((answer) => (answer.eventId === undefined ? [] : [answer.eventId])))]
  const parked = [
    ...new Set(
      answers.filter((a) => a.outcome === 'parked' && a.eventId !== undefined).map((a) => a.eventId as string),
    ),
  ]
  if (!deadLetters) return { lookedIn: 'answers', parked, deleted: [], left: parked }
  return { lookedIn: 'dead-letters', parked, ...(await deleteLetters(deadLetters, ids)) }
}
