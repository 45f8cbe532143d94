// One letter, whole: the exact bytes as received (pretty, text, base64), its hint, code, counts and times.
import { get, type Letter, type Outcome, post, type Session } from './api.js'
import { el, noticeNext, when } from './dom.js'
import { outcomeLine } from './letters.js'

/** Replays one letter (the page's Replay button) and says what it did: processed, duplicate, or why not. */
export async function replayLetter(
  eventId: string,
  session: Session,
): Promise<{ text: string; kind: 'ok' | 'warning' | 'error' }> {
  const { outcomes } = await post<{ outcomes: Outcome[] }>(
    'dead-letters/replay',
    { eventIds: [eventId] },
    session.csrfHeader,
  )
  const status = outcomes[0]?.status
  if (status === 'duplicate')
    return { text: 'Duplicate: this event was handled already; nothing ran.', kind: 'warning' }
  if (status === 'processed') return { text: 'Processed: its handlers ran and succeeded.', kind: 'ok' }
  return { text: outcomeLine(outcomes), kind: 'error' }
}

export async function showLetter(view: HTMLElement, session: Session, eventId: string): Promise<void> {
  const letter = await get<Letter>(`dead-letters/${encodeURIComponent(eventId)}`)
  const body = el('pre', { class: 'body', id: 'body' })
  const views: [string, string | null][] = [
    ['Pretty', letter.body.pretty],
    ['Raw', letter.body.text],
    ['Base64', letter.body.base64],
  ]
  const tabs = el('div', { class: 'tabs' })
  const show = (index: number) => {
    body.textContent = views[index]?.[1] ?? ''
    for (const button of tabs.querySelectorAll('button')) {
      button.setAttribute('aria-pressed', String(button.dataset.index === String(index)))
    }
  }
  views.forEach(([label, value], index) => {
    if (value === null) return
    const button = el('button', { type: 'button', 'data-tab': label.toLowerCase(), 'data-index': String(index) }, label)
    button.addEventListener('click', () => show(index))
    tabs.append(button)
  })
  const fact = (term: string, value: Node | string, id?: string) => [el('dt', {}, term), el('dd', { id }, value)]
  const status = el('span', { class: `badge status-${letter.status}`, id: 'status' }, letter.status)
  // A replay changes the letter: its status and Replayed time are shown again from the store, without a reload.
  const showState = (fresh: Letter) => {
    status.className = `badge status-${fresh.status}`
    status.textContent = fresh.status
    document.getElementById('replayed-at')?.replaceChildren(when(fresh.replayedAt))
  }
  const result = el('p', { class: 'result', id: 'result', role: 'status' })
  const replay = el('button', { type: 'button', class: 'primary', id: 'replay' }, 'Replay')
  replay.addEventListener('click', async () => {
    replay.disabled = true
    try {
      const said = await replayLetter(letter.eventId, session)
      showState(await get<Letter>(`dead-letters/${encodeURIComponent(letter.eventId)}`))
      result.textContent = said.text
      result.dataset.kind = said.kind
    } finally {
      replay.disabled = false
    }
  })
  const remove = el('button', { type: 'button', class: 'danger', id: 'delete' }, 'Delete…')
  remove.addEventListener('click', () => {
    const yes = el('button', { type: 'button', class: 'danger', id: 'confirm-yes' }, 'Delete for good')
    yes.addEventListener('click', async () => {
      await post('dead-letters/delete', { eventIds: [letter.eventId] }, session.csrfHeader)
      noticeNext(`Deleted ${letter.eventId}.`, 'ok')
      location.hash = '#/'
    })
    result.replaceChildren('Its event will not be handled. ', yes)
  })
  view.replaceChildren(
    el(
      'p',
      {},
      el('a', { href: '#/' }, '← Dead letters'),
      session.journal ? ' · ' : '',
      session.journal &&
        el('a', { href: `#/event/${encodeURIComponent(letter.eventId)}`, id: 'letter-answers' }, 'Every answer it got'),
    ),
    el(
      'section',
      { class: 'panel', id: 'letter', 'data-event-id': letter.eventId },
      el('h2', { class: 'id' }, letter.eventId),
      el(
        'dl',
        { class: 'facts' },
        ...fact('Event type', letter.eventType),
        ...fact('Code', el('span', { class: `badge code-${letter.code}` }, letter.code)),
        ...fact('Reason', letter.reason),
        ...fact('Status', status),
        ...fact('Times parked', String(letter.parkCount)),
        ...fact('First parked at', when(letter.firstParkedAt)),
        ...fact('Last parked at', when(letter.parkedAt)),
        ...fact('Replayed at', when(letter.replayedAt), 'replayed-at'),
        ...fact('Created (signed)', when(letter.createdAt)),
        ...fact('Size', `${letter.size} bytes${letter.contentType ? `, ${letter.contentType}` : ''}`),
      ),
      el('p', { class: 'hint' }, letter.hint),
      session.readOnly ? '' : el('div', { class: 'actions' }, replay, session.canDelete && remove),
      result,
    ),
    el('section', { class: 'panel' }, el('h3', {}, 'Body, exactly as received'), tabs, body),
  )
  show(views.findIndex(([, value]) => value !== null))
}
