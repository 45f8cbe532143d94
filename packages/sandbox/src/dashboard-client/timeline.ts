import { RETRY_INTERVAL_MS as HOUR, RETRY_HOURS } from '@payhooks/core/service-contract'
import type { SandboxAttempt, SandboxDelivery } from '../types.js'
import { clockTime, h } from './dom.js'

/** Dots closer than this share of the timeline stack up; about a dot's width on a desktop page. */
const STACK_PERCENT = 1
const STACK_NUDGE_PX = 9
const STACK_RISE_PX = 17
/** Label widths are reckoned on a narrow track (the page at 700 px), so they clear each other on wider ones. */
const ASSUMED_TRACK_PX = 600
const LABEL_CHAR_PERCENT = (6.5 * 100) / ASSUMED_TRACK_PX
const LABEL_GAP_PERCENT = (6 * 100) / ASSUMED_TRACK_PX

export const attemptName = (a: SandboxAttempt) =>
  a.kind !== 'scheduled' ? a.kind : a.retry ? `retry ${a.retry}` : 'first send'
export const statusText = (a: SandboxAttempt) => (a.status === undefined ? 'no answer' : String(a.status))

/** Whether `next` reads the same as `attempt` in a list: same kind, same answer (status or error) and hint. */
export const sameAttempt = (next: SandboxAttempt | undefined, attempt: SandboxAttempt) =>
  next !== undefined &&
  next.kind === attempt.kind &&
  next.status === attempt.status &&
  next.error === attempt.error &&
  next.hint === attempt.hint

/** The index of the last attempt of the run of equal attempts that starts at `index`. */
export function runEnd(attempts: SandboxAttempt[], index: number): number {
  let end = index
  while (sameAttempt(attempts[end + 1], attempts[index] as SandboxAttempt)) end++
  return end
}

/**
 * One label per run of attempts that got the same answer, on the run's first dot: `503`, or `503 ×71` for 71 in a
 * row. By attempt index.
 */
function labelRuns(attempts: SandboxAttempt[]): Map<number, string> {
  const labels = new Map<number, string>()
  for (let index = 0; index < attempts.length; ) {
    const attempt = attempts[index] as SandboxAttempt
    const end = runEnd(attempts, index)
    const text = attempt.status === undefined ? 'err' : String(attempt.status)
    labels.set(index, end > index ? `${text} ×${end - index + 1}` : text)
    index = end + 1
  }
  return labels
}

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
  // Attempts closer than a dot's width (several at 0 h: a first send, a chaos copy, a resend) are a stack: each
  // one's dot is nudged right, so none hides another.
  let stackStart = Number.NEGATIVE_INFINITY
  let stacked = 0
  const labels = labelRuns(delivery.attempts)
  // Each label takes the lowest row where it clears the labels already placed, so none runs into another ("err200").
  const rowEnds: number[] = []
  delivery.attempts.forEach((attempt, index) => {
    const offset = attempt.time - start
    const percent = (offset / (hours * HOUR)) * 100
    if (percent - stackStart < STACK_PERCENT) stacked += 1
    else {
      stackStart = percent
      stacked = 0
    }
    const dot = h('span', {
      class: `dot ${attempt.ok ? 'ok' : 'fail'} kind-${attempt.kind}`,
      'data-status': statusText(attempt),
      'data-index': String(index + 1),
      'data-stack': String(stacked),
      title: `${attemptName(attempt)} at ${clockTime(attempt.time, true)}: ${attempt.error ?? statusText(attempt)}, ${attempt.latencyMs} ms${attempt.hint ? `\n${attempt.hint}` : ''}`,
    })
    dot.style.left = `calc(${at(offset)} + ${stacked * STACK_NUDGE_PX}px)`
    const text = labels.get(index)
    if (text !== undefined) {
      const half = (text.length * LABEL_CHAR_PERCENT) / 2 + LABEL_GAP_PERCENT
      const centre = percent + (stacked * STACK_NUDGE_PX * 100) / ASSUMED_TRACK_PX
      let row = rowEnds.findIndex((end) => end <= centre - half)
      if (row < 0) row = rowEnds.push(0) - 1
      rowEnds[row] = centre + half
      const label = h('span', { class: 'dot-label', 'data-row': String(row) }, text)
      label.style.bottom = `${16 + row * STACK_RISE_PX}px`
      dot.append(label)
    }
    track.append(dot)
  })
  const tallest = Math.max(1, rowEnds.length)
  if (delivery.nextAttemptTime !== undefined) {
    const next = h('span', { class: 'dot next', title: `next attempt at ${clockTime(delivery.nextAttemptTime)}` })
    next.style.left = at(delivery.nextAttemptTime - start)
    track.append(next)
  }
  const line = h('div', { class: 'timeline', 'aria-label': 'attempts over time' }, track)
  line.style.paddingTop = `${30 + (tallest - 1) * STACK_RISE_PX}px`
  return line
}
