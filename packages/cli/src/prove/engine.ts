// Runs the fixed series of checks against one receiver, then judges each (with the ledger when given).
import { type Check, limitJudgement } from './check.js'
import { duplicateChecks } from './checks/duplicates.js'
import { unknownType, validEventChecks } from './checks/events.js'
import { inputChecks } from './checks/input.js'
import { resendAfterOutage } from './checks/resend.js'
import { signatureChecks } from './checks/signature.js'
import { deadlineCheck, deadlineJudgement } from './deadline.js'
import { Deliveries } from './deliveries.js'
import { LEDGER_WAIT_MS, LedgerError, readLedger, settledLedger } from './ledger.js'
import { GIVE_UP_MS, Sender, Unreachable } from './send.js'
import type { CheckResult, Ledger } from './types.js'

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
  if (options.ledgerUrl) {
    const shouldRun = sent.flatMap((s) => s.shouldRun ?? [])
    ledger = await settledLedger(options.ledgerUrl, shouldRun, options.ledgerWaitMs ?? LEDGER_WAIT_MS)
  }
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
  }
}
