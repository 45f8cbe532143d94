// The overview's pauses: a banner naming every type paused (with its reason, since when, by whom, and Resume), then
// a row per event type with a reason field and a Pause button. Read-only boards show the banner alone.
import { ApiError, post, type Session } from './api.js'
import { el, notice, when } from './dom.js'

export interface Paused {
  pauses: { eventType: string; reason: string; since: string; by: string | null }[]
  types: string[]
}

const named = (eventType: string) => (eventType === '*' ? 'every event type' : eventType)

async function act(path: 'pause' | 'resume', body: Record<string, string>, session: Session, done: () => void) {
  try {
    await post(path, body, session.csrfHeader)
    notice(
      path === 'pause'
        ? `Paused ${named(body.eventType as string)}: every instance stops its handlers within about a second.`
        : `Resumed ${named(body.eventType as string)}: the letters parked while it was paused are being replayed.`,
      'ok',
    )
    done()
  } catch (error) {
    notice(error instanceof ApiError ? `The board answered ${error.status}: ${error.message}` : String(error), 'error')
  }
}

/** The banner (while something is paused) and the pause controls. `reload` shows the overview again. */
export function pausesPanel(paused: Paused, session: Session, reload: () => void): HTMLElement[] {
  const pausedTypes = new Set(paused.pauses.map((pause) => pause.eventType))
  const banner = paused.pauses.length
    ? el(
        'section',
        { class: 'panel banner', id: 'paused-banner', role: 'status' },
        el('h3', {}, 'Paused'),
        el(
          'ul',
          {},
          ...paused.pauses.map((pause) => {
            const resume = el('button', { type: 'button', class: 'resume', disabled: session.readOnly }, 'Resume')
            resume.addEventListener('click', () => act('resume', { eventType: pause.eventType }, session, reload))
            return el(
              'li',
              { 'data-type': pause.eventType },
              `${named(pause.eventType)} paused since ${when(pause.since)}${pause.by ? ` by ${pause.by}` : ''}`,
              pause.reason ? ` — ${pause.reason}` : '',
              ' ',
              session.readOnly ? null : resume,
            )
          }),
        ),
        el(
          'p',
          { class: 'note' },
          session.durable
            ? 'Their deliveries are parked as paused dead letters; Resume replays them.'
            : 'Their deliveries are answered 503 paused: the service retries them for 72 hours from their creation.',
        ),
      )
    : null
  if (session.readOnly) return banner ? [banner] : []
  const rows = ['*', ...paused.types].filter((type) => !pausedTypes.has(type))
  const controls = el(
    'section',
    { class: 'panel', id: 'pauses' },
    el('h3', {}, 'Pause an event type'),
    el(
      'ul',
      {},
      ...rows.map((eventType) => {
        const reason = el('input', {
          type: 'text',
          maxlength: '200',
          placeholder: 'reason',
          'aria-label': `reason to pause ${named(eventType)}`,
        })
        const button = el('button', { type: 'button', class: 'pause' }, 'Pause')
        button.addEventListener('click', () => act('pause', { eventType, reason: reason.value }, session, reload))
        return el('li', { 'data-type': eventType }, el('span', {}, named(eventType)), ' ', reason, ' ', button)
      }),
    ),
  )
  return banner ? [banner, controls] : [controls]
}
