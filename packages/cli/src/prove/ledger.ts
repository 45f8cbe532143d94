// The optional ledger: a GET on the receiver's test deployment returning how many times its handlers ran per
// event id, as a JSON object such as `{ "evt_prove_m3k2ab12_4": 1 }` (ids it never ran may be absent).
import type { Ledger } from './types.js'

/** The ledger is read until every acknowledged event shows a run, for at most this long (a queue may run it late). */
export const LEDGER_WAIT_MS = 5000
const POLL_MS = 250
const TIMEOUT_MS = 10_000

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
      `could not read the ledger ${url}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
    )
  }
  if (!response.ok) throw new LedgerError(`the ledger ${url} answered ${response.status}, not 2XX`)
  let json: unknown
  try {
    json = await response.json()
  } catch {
    throw new LedgerError(`the ledger ${url} is not JSON; expected an object such as {"evt_1": 1}`)
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new LedgerError(`the ledger ${url} is not a JSON object; expected one such as {"evt_1": 1}`)
  }
  for (const [id, count] of Object.entries(json)) {
    if (!Number.isSafeInteger(count) || (count as number) < 0) {
      throw new LedgerError(`the ledger ${url} counts ${JSON.stringify(id)} as ${JSON.stringify(count)}, not a count`)
    }
  }
  return json as Ledger
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
