import { RETRY_INTERVAL_MS as HOUR, RETRY_HOURS } from '@payhooks/core/service-contract'
import type { SandboxAttempt, SandboxDelivery } from '../types.js'
import { clockTime, h } from './dom.js'

/** Dots closer than this share of the timeline stack up; about a label's width on a desktop page. */
const STACK_PERCENT = 4
const STACK_NUDGE_PX = 9
const STACK_RISE_PX = 17

export const attemptName = (a: SandboxAttempt) =>
  a.kind !== 'scheduled' ? a.kind : a.retry ? `retry ${a.retry}` : 'first send'
export const statusText = (a: SandboxAttempt) => (a.status === undefined ? 'no answer' : String(a.status))

/** The delivery's attempts as dots on an hour scale, up to the service's 72 hours, and the next one due. */
export function timeline(delivery: SandboxDelivery): HTMLElement {
  const start = delivery.firstAttemptTime
  const latest = Math.max(
    ...delivery.attempts.map((a) => a.time - start),
    delivery.nextAttemptTime === undefined ? 0 : delivery.nextAttemptTime - start,
    0,
  )
  const hours = Math.min(RETRY_HOURS, Math.max(3, Math.ceil(latest / HOUR) + 1))
  const step = hours <= 8 ? 1 : hours <= 24 ? 3 : 12
  const at = (offset: number) => `${Math.min(100, Math.max(0, (offset / (hours * HOUR)) * 100))}%`
  const track = h('div', { class: 'track' })
  for (let hour = 0; hour <= hours; hour += step) {
    const tick = h('span', { class: 'tick' }, `${hour} h`)
    tick.style.left = at(hour * HOUR)
    track.append(tick)
  }
  // Attempts closer than a label's width (several at 0 h: a first send, a chaos copy, a resend) are a stack:
  // each one's dot is nudged right and its label raised, so none hides another.
  let stackStart = Number.NEGATIVE_INFINITY
  let stacked = 0
  let tallest = 1
  delivery.attempts.forEach((attempt, index) => {
    const offset = attempt.time - start
    const percent = (offset / (hours * HOUR)) * 100
    if (percent - stackStart < STACK_PERCENT) stacked += 1
    else {
      stackStart = percent
      stacked = 0
    }
    tallest = Math.max(tallest, stacked + 1)
    const dot = h(
      'span',
      {
        class: `dot ${attempt.ok ? 'ok' : 'fail'} kind-${attempt.kind}`,
        'data-status': statusText(attempt),
        'data-index': String(index + 1),
        'data-stack': String(stacked),
        title: `${attemptName(attempt)} at ${clockTime(attempt.time, true)}: ${attempt.error ?? statusText(attempt)}, ${attempt.latencyMs} ms${attempt.hint ? `\n${attempt.hint}` : ''}`,
      },
      h('span', { class: 'dot-label' }, attempt.status === undefined ? 'err' : String(attempt.status)),
    )
    dot.style.left = `calc(${at(offset)} + ${stacked * STACK_NUDGE_PX}px)`
    ;(dot.firstChild as HTMLElement).style.bottom = `${16 + stacked * STACK_RISE_PX}px`
    track.append(dot)
  })
  if (delivery.nextAttemptTime !== undefined) {
    const next = h('span', { class: 'dot next', title: `next attempt at ${clockTime(delivery.nextAttemptTime)}` })
    next.style.left = at(delivery.nextAttemptTime - start)
    track.append(next)
  }
  const line = h('div', { class: 'timeline', 'aria-label': 'attempts over time' }, track)
  line.style.paddingTop = `${30 + (tallest - 1) * STACK_RISE_PX}px`
  return line
}
