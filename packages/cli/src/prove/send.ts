// The only way prove talks to a receiver: one request at a time (two for the "at once" check), paced, each given up
// on a little after the service's 10-second limit, to the one URL the user gave.
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { ANSWER_LIMIT_MS } from '@payhooks/core'
import { ANSWER_CAP_BYTES, cleanText, htmlText } from './answer-text.js'
import type { Answer } from './types.js'

/** A request is given up on this long after its start: past the limit, so an answer at 10.2 s is seen as late. */
export const GIVE_UP_MS = ANSWER_LIMIT_MS + 500
/** Requests start at least this far apart, so prove never loads a receiver (a few dozen requests in all). */
export const MIN_GAP_MS = 50
/** Longest reason kept from an answer. */
const REASON_CHARS = 100

/** What to send; `label` names it in the report. */
export interface Outgoing {
  label: string
  method?: string
  body?: string | Buffer
  headers?: Record<string, string>
  eventId?: string
}

/** No answer at all from the first request: the URL is wrong or the receiver is down (exit code 2). */
export class Unreachable extends Error {
  override name = 'Unreachable'
}

/**
 * What an answer body says, in one line of plain text: a JSON `error: message` or `status`, else the start of its
 * text (an HTML page's text without its tags); and its JSON `status` as the outcome. Linear in the body's length;
 * terminal escapes and control characters never come through.
 */
export function readAnswer(text: string): { reason: string; outcome?: string } {
  let reason = text
  let outcome: string | undefined
  try {
    const json = JSON.parse(text) as Record<string, unknown>
    if (json && typeof json === 'object' && !Array.isArray(json)) {
      const { error, message, status } = json
      const parts = [error, message].filter((part) => typeof part === 'string' && part !== '')
      if (typeof status === 'string') outcome = status
      if (parts.length > 0) reason = parts.join(': ')
      else if (outcome !== undefined) reason = outcome
    }
  } catch {}
  // An HTML error page says what it says in its text, not its tags.
  if (reason.trimStart().startsWith('<')) reason = htmlText(reason)
  const line = cleanText(reason).replace(/\s+/g, ' ').trim()
  const cut = line.length > REASON_CHARS ? `${line.slice(0, REASON_CHARS - 1)}…` : line
  if (outcome === undefined) return { reason: cut }
  return { reason: cut, outcome: cleanText(outcome).replace(/\s+/g, ' ').trim().slice(0, 40) }
}

/** Sends requests to `url` only, paced {@link MIN_GAP_MS} apart, each given up on after `giveUpMs`. */
export class Sender {
  readonly #url: URL
  readonly #giveUpMs: number
  #nextStart = 0
  #answered = false
  /** Every answer, in the order sent. */
  readonly answers: Answer[] = []

  constructor(url: string, giveUpMs = GIVE_UP_MS) {
    this.#url = new URL(url)
    this.#giveUpMs = giveUpMs
  }

  /** Sends one request once the pace allows. */
  async send(outgoing: Outgoing): Promise<Answer> {
    const wait = this.#nextStart - performance.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    this.#nextStart = performance.now() + MIN_GAP_MS
    const answer = await this.#request(outgoing)
    if (answer.error === 'connection' && !this.#answered) {
      throw new Unreachable(`could not reach ${this.#url.href}: ${answer.reason}`)
    }
    if (answer.error !== 'connection') this.#answered = true
    this.answers.push(answer)
    return answer
  }

  /** Sends `requests` at the same moment (the "twice at once" check: the only concurrency prove uses). */
  async together(requests: Outgoing[]): Promise<Answer[]> {
    const wait = this.#nextStart - performance.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
    this.#nextStart = performance.now() + MIN_GAP_MS
    const answers = await Promise.all(requests.map((outgoing) => this.#request(outgoing)))
    this.answers.push(...answers)
    return answers
  }

  #request(outgoing: Outgoing): Promise<Answer> {
    const method = outgoing.method ?? 'POST'
    const body = outgoing.body === undefined ? undefined : Buffer.from(outgoing.body)
    const base = { label: outgoing.label, method, ...(outgoing.eventId ? { eventId: outgoing.eventId } : {}) }
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    return new Promise<Answer>((resolve) => {
      let settled = false
      const finish = (answer: Answer) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(answer)
      }
      const send = this.#url.protocol === 'https:' ? httpsRequest : httpRequest
      const req = send(this.#url, {
        method,
        // A fresh connection per request, as the service opens them; no redirect is followed.
        agent: false,
        headers: {
          'user-agent': 'payhooks-prove',
          ...(body ? { 'content-length': String(body.length) } : {}),
          ...outgoing.headers,
        },
      })
      const timer = setTimeout(() => {
        finish({ ...base, reason: `no answer within ${this.#giveUpMs} ms`, ms: elapsed(), error: 'timeout' })
        req.destroy()
      }, this.#giveUpMs)
      req.on('response', (res) => {
        // At most ANSWER_CAP_BYTES are kept; then the connection is closed, so the rest is never read.
        const chunks: Buffer[] = []
        let kept = 0
        const done = () =>
          finish({
            ...base,
            status: res.statusCode ?? 0,
            ...readAnswer(Buffer.concat(chunks).toString('utf8')),
            ms: elapsed(),
          })
        res.on('data', (chunk: Buffer) => {
          if (settled) return
          const room = ANSWER_CAP_BYTES - kept
          chunks.push(chunk.length <= room ? chunk : chunk.subarray(0, room))
          kept += Math.min(chunk.length, room)
          if (kept < ANSWER_CAP_BYTES) return
          done()
          req.destroy()
        })
        res.on('end', done)
        // A receiver that closes the connection after its status (as one refusing a large body may) still answered.
        res.on('error', done)
        res.on('aborted', done)
      })
      req.on('error', (error: NodeJS.ErrnoException) => {
        // Writing the rest of a refused body fails once the receiver closes: its answer, if any, still counts.
        setTimeout(
          () => finish({ ...base, reason: cleanText(error.code ?? error.message), ms: elapsed(), error: 'connection' }),
          50,
        )
      })
      req.end(body)
    })
  }
}
