import { SIGNATURE_HEADER } from '@payhooks/core/service-contract'
import type { SandboxAttempt, SandboxDelivery } from '../types.js'
import { clockTime, duration, h } from './dom.js'
import { now, state } from './state.js'
import { attemptName, runEnd, timeline } from './timeline.js'

/** The sandbox keeps this much of each answer (send.ts); a longer body was cut there. */
const KEPT_ANSWER_CHARS = 500
/** An answer this short is shown as it is, with nothing to unfold. */
const SHORT_ANSWER_CHARS = 40

export const badge = (state: string, text = state) => h('span', { class: `badge state-${state}` }, text)

/** The answer's body folded to its first line, unfolding to all of it that the sandbox kept. */
function answerCell(a: SandboxAttempt): HTMLElement {
  if (a.status === undefined) return h('td', { class: 'answer error' }, a.error ?? 'no answer')
  if (!a.response) return h('td', { class: 'answer' }, '—')
  if (a.response.length <= SHORT_ANSWER_CHARS && !a.response.includes('\n')) {
    return h('td', { class: 'answer' }, h('code', {}, a.response))
  }
  const cut = a.response.length >= KEPT_ANSWER_CHARS
  return h(
    'td',
    { class: 'answer' },
    h(
      'details',
      { class: 'body' },
      h('summary', {}, h('code', {}, a.response)),
      h('pre', {}, a.response),
      cut && h('p', { class: 'cut' }, `The sandbox keeps the first ${KEPT_ANSWER_CHARS} characters of an answer.`),
    ),
  )
}

/** Runs of equal attempts longer than this show their first and last rows, the ones between folded behind one row. */
const FOLD_RUNS_OVER = 3

/** A row that stands for `rows` folded attempts, and unfolds them when asked. */
function foldRow(rows: HTMLElement[]): HTMLElement {
  const unfold = h('button', { type: 'button', class: 'unfold' }, `${rows.length} more with the same answer: show them`)
  const fold = h('tr', { class: 'fold' }, h('td', {}, '⋮'), h('td', { colspan: '5' }, unfold))
  unfold.addEventListener('click', () => {
    for (const row of rows) row.hidden = false
    fold.remove()
  })
  return fold
}

function attemptsTable(delivery: SandboxDelivery): HTMLElement {
  const { attempts } = delivery
  const rows: HTMLElement[] = []
  for (let first = 0; first < attempts.length; ) {
    const last = runEnd(attempts, first)
    const folding = last - first + 1 > FOLD_RUNS_OVER
    const folded: HTMLElement[] = []
    for (let index = first; index <= last; index++) {
      const a = attempts[index] as SandboxAttempt
      const row = h(
        'tr',
        { class: a.ok ? 'ok' : 'fail' },
        h('td', {}, String(index + 1)),
        h('td', { class: 'name' }, attemptName(a)),
        h('td', { class: 'time' }, `${clockTime(a.time, true)} (+${duration(a.time - delivery.firstAttemptTime)})`),
        h('td', { class: 'status' }, a.status === undefined ? 'no answer' : String(a.status)),
        h('td', { class: 'latency' }, `${a.latencyMs} ms`),
        answerCell(a),
      )
      if (folding && index > first && index < last) {
        row.hidden = true
        folded.push(row)
      }
      if (folding && index === last) rows.push(foldRow(folded))
      rows.push(row)
      // What a puzzling answer means, once per run of attempts that got it.
      if (index === first && a.hint && a.hint !== attempts[index - 1]?.hint) {
        rows.push(h('tr', { class: 'hint' }, h('td', {}, ''), h('td', { colspan: '5' }, a.hint)))
      }
    }
    first = last + 1
  }
  return h(
    'table',
    { class: 'attempts' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ...['#', 'attempt', 'clock time (UTC)', 'status', 'latency', 'answer body'].map((name) => h('th', {}, name)),
      ),
    ),
    h('tbody', {}, ...rows),
  )
}

/** One subscription's delivery of an event: its state, timeline, attempts and the last signature sent. */
export function deliveryView(delivery: SandboxDelivery): HTMLElement {
  const subscription = state.subscriptions.find((s) => s.id === delivery.subscriptionId)
  const last = delivery.attempts[delivery.attempts.length - 1]
  const next = delivery.nextAttemptTime
  return h(
    'div',
    { class: 'delivery', 'data-subscription-id': delivery.subscriptionId, 'data-state': delivery.state },
    h(
      'div',
      { class: 'delivery-head' },
      badge(delivery.state),
      h('code', { class: 'url' }, subscription ? subscription.url : `${delivery.subscriptionId} (deleted)`),
      next !== undefined &&
        h(
          'span',
          { class: 'next-attempt' },
          `next attempt ${clockTime(next, true)} (${next > now() ? `in ${duration(next - now())}` : 'due'})`,
        ),
      delivery.reason && h('span', { class: 'reason' }, delivery.reason),
    ),
    timeline(delivery),
    delivery.attempts.length > 0 ? attemptsTable(delivery) : h('p', { class: 'empty' }, 'No attempt yet.'),
    last?.signature &&
      h('p', { class: 'signature' }, `${SIGNATURE_HEADER}: `, h('code', { class: 'sig' }, last.signature)),
  )
}
