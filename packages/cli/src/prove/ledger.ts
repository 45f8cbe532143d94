// The optional ledger: a GET on the receiver's test deployment returning how many times its handlers ran per
// event id, as a JSON object such as `{ "evt_prove_m3k2ab12_4": 1 }` (ids it never ran may be absent).
import { cleanText } from './answer-text.js'
import type { Ledger } from './types.js'

/** The ledger is read until every acknowledged event shows a run, for at most this long (a queue may run it late). */
export const LEDGER_WAIT_MS = 5000
const POLL_MS = 250
const TIMEOUT_MS = 10_000
/**
 * Most bytes of a ledger read: about 100,000 ids with their counts, thousands of times what a run needs (a ledger
 * serving only `evt_prove_` ids, as the guide's does, stays far below it).
 */
export const LEDGER_CAP_BYTES = 4 * 1024 * 1024

/** The ledger could not be read or is not `{ id: count }`: exit code 2 before anything is sent, 1 after. */
export class LedgerError extends Error {
  override name = 'LedgerError'
}

/** GETs the ledger and checks its shape: a JSON object of non-negative integer counts. */
export async function readLedger(url: string): Promise<Ledger> {
  let response: Response
  try {
    response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause
    throw new LedgerError(
      `could not read the ledger ${url}: ${cleanText(cause?.code ?? cause?.message ?? (error as Error).message)}`,
    )
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {})
    throw new LedgerError(`the ledger ${url} answered ${response.status}, not 2XX`)
  }
  const text = await cappedText(response, url)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new LedgerError(`the ledger ${url} is not JSON; expected an object such as {"evt_1": 1}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new LedgerError(`the ledger ${url} is not a JSON object; expected one such as {"evt_1": 1}`)
  }
  for (const [id, count] of Object.entries(json)) {
    if (!Number.isSafeInteger(count) || (count as number) < 0) {
      const what = cleanText(`${JSON.stringify(id.slice(0, 80))} as ${JSON.stringify(count)?.slice(0, 40)}`)
      throw new LedgerError(`the ledger ${url} counts ${what}, not a count`)
    }
  }
  return json as Ledger
}

/** The body of `response` as text, refused past {@link LEDGER_CAP_BYTES} (the rest is never read). */
async function cappedText(response: Response, url: string): Promise<string> {
  const reader = response.body?.getReader()
  if (!reader) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      if (size > LEDGER_CAP_BYTES) {
        await reader.cancel().catch(() => {})
        throw new LedgerError(
          `the ledger ${url} answered more than ${LEDGER_CAP_BYTES / 1024 / 1024} MiB; serve only the evt_prove_ ids`,
        )
      }
      chunks.push(value)
    }
  } catch (error) {
    if (error instanceof LedgerError) throw error
    throw new LedgerError(`could not read the ledger ${url}: ${cleanText((error as Error).message ?? String(error))}`)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** Reads the ledger until each of `shouldRun` has a count, or `waitMs` passed; the last reading is the answer. */
export async function settledLedger(url: string, shouldRun: string[], waitMs = LEDGER_WAIT_MS): Promise<Ledger> {
  const until = performance.now() + waitMs
  for (;;) {
    const ledger = await readLedger(url)
    if (shouldRun.every((id) => (ledger[id] ?? 0) > 0) || performance.now() >= until) return ledger
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}
