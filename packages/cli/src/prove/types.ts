// What a prove run sends, what it got back, and how each check judged it.

/** A check's verdict. */
export type Verdict = 'PASS' | 'WARN' | 'FAIL'

/** One request prove sent and what came back. */
export interface Answer {
  /** What this request was, such as `first copy`. */
  label: string
  method: string
  /** The event_id the body carries, when it has one. */
  eventId?: string
  /** The HTTP status, undefined when no answer came (see `error`). */
  status?: number
  /** One line from the answer: its JSON `error: message`, `status`, or the start of its text. */
  reason: string
  /** The answer body's JSON `status`, when it has one: a kit receiver says processed, duplicate, queued or parked. */
  outcome?: string
  /** From the first byte sent to the answer's last byte (or to the give-up). */
  ms: number
  /** Why no answer came: `timeout` past the 10-second limit, or the connection failed. */
  error?: 'timeout' | 'connection'
}

/** How one check ended. */
export interface CheckResult {
  id: string
  title: string
  verdict: Verdict
  answers: Answer[]
  /** What prove saw, in a few words. */
  finding: string
  /** Why it matters and how to fix it, one line. */
  advice: string
}

/** How many times the receiver's handlers ran, per event id (`GET --ledger`). */
export type Ledger = Record<string, number>

/** What the events of one check are expected to do with the handlers, checked against the ledger. */
export interface LedgerExpectation {
  /** The check's id. */
  check: string
  eventId: string
  /** `once`: acknowledged, so handlers ran exactly once; `never`: refused input, no handler may run. */
  expect: 'once' | 'never' | 'once-or-parked'
}
