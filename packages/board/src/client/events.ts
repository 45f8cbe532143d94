// The Events page: "did we get evt_X?" answered in one step (its id in the search box, Enter: its timeline, or that
// no answer was recorded), and the fleet's answers filtered by type, outcome and time, newest first, keyset-paged.
// Read from the journal every instance writes; the journal holds no body, so nothing here shows one.
import { get, type Session } from './api.js'
import { type Child, el, when } from './dom.js'
import { replayLetter } from './letter.js'
import { fromInput, inputValue, precise, zoneName } from './time.js'

interface Answer {
  at: string
  status: number
  outcome: string
  instance: string
  durationMs: number
  verifiedWith: { index: number; label: string | null }
  /** How many answers alike the row stands for (copies counted past the first few, answers dropped). */
  copies: number
}

/** A span in which an instance dropped answers of any event. */
interface Gap {
  from: string
  to: string
  instance: string
  dropped: number
}

type Off = { enabled: false }
interface Kept {
  enabled: true
  retentionHours: number
}

interface Page extends Kept {
  answers: Listed[]
  cursor: string | null
  /** Set when a list by event type stopped searching: answers before it are not searched yet. */
  searchedFrom?: string | null
}

interface Timeline extends Kept {
  eventId: string
  gaps: Gap[]
  timeline: { eventType: string; createdAt: string | null; handledAt: string | null; answers: Answer[] } | null
  deadLetter: { status: string; code: string; parkedAt: string } | { unavailable: true } | null
}

type Listed = Answer & { eventId: string; eventType: string }

/** A table of answers: the list's, each with its event's id and type (`listed`), or an event's timeline. */
function answersTable(id: string, answers: readonly Answer[] | readonly Listed[], listed: boolean): HTMLTableElement {
  const head = ['Answered at', ...(listed ? ['Event id', 'Type'] : []), 'Status', 'Outcome', 'Instance', 'Took']
  const row = (answer: Answer | Listed) =>
    el(
      'tr',
      { 'data-event-id': listed ? (answer as Listed).eventId : undefined, 'data-outcome': answer.outcome },
      el('td', {}, precise(answer.at)),
      ...(listed
        ? [
            el(
              'td',
              {},
              // A gap's row is no event's: it counts the answers of any event an instance dropped.
              (answer as Listed).eventId === ''
                ? 'any event'
                : el('a', { href: eventHref((answer as Listed).eventId), class: 'id' }, (answer as Listed).eventId),
            ),
            el('td', {}, (answer as Listed).eventType),
          ]
        : []),
      el('td', {}, statusBadge(answer.status)),
      el('td', {}, outcomeBadge(answer.outcome), (answer.copies ?? 1) > 1 ? ` ×${answer.copies}` : ''),
      el('td', { class: 'id' }, answer.instance),
      el('td', {}, ms(answer.durationMs)),
      el('td', {}, secret(answer)),
    )
  return el(
    'table',
    { id },
    el('thead', {}, el('tr', {}, ...[...head, 'Verified with'].map((h) => el('th', {}, h)))),
    el('tbody', {}, ...answers.map(row)),
  )
}

const FILTERS = ['eventType', 'outcome', 'from', 'to'] as const
/** Outcomes offered in the filter (any other can be typed). */
const OUTCOMES = [
  'processed',
  'duplicate',
  'queued',
  'parked',
  'in_progress',
  'handler_failed',
  'handler_timeout',
  'schema_mismatch',
  'stale_event',
  'future_event',
  'store_unavailable',
  'deadline_exceeded',
  'busy',
  'quarantined',
  'key_held',
  'event_conflict',
  'closing',
  'processed_late',
  'replay_processed',
  'replay_failed',
  'journal_dropped',
  'journal_gap',
]

const eventHref = (eventId: string) => `#/event/${encodeURIComponent(eventId)}`

/** The search box: an id typed or pasted, then Enter, opens its timeline. */
function searchBox(value = ''): HTMLFormElement {
  const input = el('input', {
    id: 'event-search',
    name: 'eventId',
    type: 'search',
    'aria-label': 'event id',
    placeholder: 'Did we get evt_…? Paste an event id, then Enter',
    value,
    autocomplete: 'off',
    spellcheck: 'false',
  })
  const form = el(
    'form',
    { class: 'filters search', role: 'search', id: 'event-find' },
    input,
    el('button', { type: 'submit' }, 'Find'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const id = input.value.trim()
    if (id) location.hash = eventHref(id)
  })
  return form
}

function filterForm(params: URLSearchParams): HTMLFormElement {
  const input = (name: string, label: string, type = 'search', list?: string) =>
    el('input', { name, type, list, 'aria-label': label, placeholder: label, value: params.get(name) ?? '' })
  const from = input('from', 'answered from', 'datetime-local')
  const to = input('to', 'answered before', 'datetime-local')
  from.value = inputValue(params.get('from'))
  to.value = inputValue(params.get('to'))
  const form = el(
    'form',
    { class: 'filters', id: 'event-filters' },
    input('eventType', 'event type'),
    input('outcome', 'any outcome', 'search', 'outcomes'),
    el('datalist', { id: 'outcomes' }, ...OUTCOMES.map((outcome) => el('option', { value: outcome }))),
    el('label', {}, `from (${zoneName()})`, from),
    el('label', {}, `to (${zoneName()})`, to),
    el('button', { type: 'submit' }, 'Filter'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const next = new URLSearchParams()
    for (const name of FILTERS) {
      let value = ((form.elements.namedItem(name) as HTMLInputElement | null)?.value ?? '').trim()
      if (value && (name === 'from' || name === 'to')) value = fromInput(value)
      if (value) next.set(name, value)
    }
    location.hash = `#/events?${next}`
  })
  return form
}

/** The journal is off: say so, and how to turn it on. */
function journalOff(view: HTMLElement): void {
  view.replaceChildren(
    el('h2', {}, 'Events'),
    el(
      'section',
      { class: 'panel', id: 'journal-off' },
      el('h3', {}, 'The journal is off'),
      el(
        'p',
        {},
        'This receiver keeps no account of its answers, so the board cannot say what became of an event. Give every receiver the same journal: ',
        el('code', {}, 'createWebhooks({ journal: redisJournal(redis), instance })'),
        ' (or postgresJournal(pool)), and mount the board on a receiver that has it.',
      ),
      el(
        'p',
        {},
        'How, and what it costs: the guide “The event journal”, ',
        el('code', { id: 'journal-guide' }, 'docs/guide/journal.md'),
        ' in the payhooks documentation.',
      ),
    ),
  )
}

const ms = (value: number) => `${value} ms`
const secret = (answer: Answer) =>
  answer.verifiedWith.label === null
    ? `secret #${answer.verifiedWith.index}`
    : `${answer.verifiedWith.label} (#${answer.verifiedWith.index})`
/** Status 0: an account of the receiver's own (work settled after the deadline, a replay, answers dropped). */
const statusBadge = (status: number) =>
  status === 0
    ? el('span', { class: 'badge http-none', title: 'no HTTP answer: an account of the receiver' }, '—')
    : el('span', { class: `badge http-${status >= 200 && status < 300 ? 'ok' : 'fail'}` }, String(status))
const span = (gap: Gap) =>
  `${gap.dropped} answer${gap.dropped === 1 ? '' : 's'} dropped by ${gap.instance} between ${precise(gap.from)} and ${precise(gap.to)}`
/** The spans in which answers were dropped, or nothing. */
const gapsNote = (gaps: readonly Gap[] | undefined, lead: string) =>
  gaps && gaps.length > 0
    ? el(
        'div',
        { class: 'note', id: 'journal-gaps' },
        el('p', {}, lead),
        el('ul', {}, ...gaps.map((gap) => el('li', {}, span(gap)))),
      )
    : null
const outcomeBadge = (outcome: string) => el('span', { class: `badge outcome outcome-${outcome}` }, outcome)
const keptLine = (hours: number) => `kept ${Number.isInteger(hours) ? hours : hours.toFixed(1)} hours`

export async function showEvents(view: HTMLElement, params: URLSearchParams): Promise<void> {
  const query = new URLSearchParams()
  for (const name of [...FILTERS, 'cursor']) {
    const value = params.get(name)
    if (value) query.set(name, value)
  }
  query.set('limit', '50')
  const page = await get<Page | Off>(`events?${query}`)
  if (!page.enabled) return journalOff(view)
  const older = new URLSearchParams(params)
  if (page.cursor) older.set('cursor', page.cursor)
  const newest = new URLSearchParams(params)
  newest.delete('cursor')
  view.replaceChildren(
    el('h2', {}, 'Events'),
    searchBox(),
    el(
      'p',
      { class: 'note' },
      `Every answer of every instance sharing the journal, newest first (${keptLine(page.retentionHours)}).`,
    ),
    filterForm(params),
    page.answers.length === 0
      ? el(
          'p',
          { class: 'empty', id: 'no-events' },
          page.searchedFrom
            ? `No answer matches since ${when(page.searchedFrom)}: older answers are searched on with “older →”.`
            : 'No answer matches.',
        )
      : answersTable('events', page.answers, true),
    page.answers.length > 0 && page.searchedFrom
      ? el('p', { class: 'note', id: 'searched-from' }, `Searched back to ${when(page.searchedFrom)}.`)
      : '',
    el(
      'div',
      { class: 'pager' },
      params.get('cursor') && el('a', { href: `#/events?${newest}`, id: 'events-newest' }, '← newest'),
      page.cursor && el('a', { href: `#/events?${older}`, id: 'events-older' }, 'older →'),
    ),
  )
}

export async function showEvent(view: HTMLElement, session: Session, eventId: string): Promise<void> {
  const data = await get<Timeline | Off>(`events/${encodeURIComponent(eventId)}`)
  if (!data.enabled) return journalOff(view)
  const { timeline, deadLetter } = data
  const back = el('p', {}, el('a', { href: '#/events' }, '← Events'))
  const letter = deadLetter && !('unavailable' in deadLetter) ? deadLetter : null
  const result = el('p', { class: 'result', id: 'result', role: 'status' })
  const replay = el('button', { type: 'button', class: 'primary', id: 'replay' }, 'Replay its dead letter')
  replay.addEventListener('click', async () => {
    replay.disabled = true
    try {
      const said = await replayLetter(eventId, session)
      // The timeline again, its letter's new status with it, then what the replay did.
      await showEvent(view, session, eventId)
      const fresh = document.getElementById('result') ?? result
      fresh.textContent = said.text
      fresh.dataset.kind = said.kind
    } finally {
      replay.disabled = false
    }
  })
  const letterLine = letter
    ? el(
        'div',
        { class: 'actions', id: 'dead-letter' },
        el('a', { href: `#/letter/${encodeURIComponent(eventId)}`, id: 'dead-letter-link' }, 'Its dead letter'),
        el('span', { class: `badge status-${letter.status}` }, letter.status),
        el('span', { class: `badge code-${letter.code}` }, letter.code),
        `parked ${when(letter.parkedAt)}`,
        !session.readOnly && replay,
      )
    : el(
        'p',
        { class: 'note', id: 'dead-letter' },
        deadLetter
          ? 'The dead-letter store could not be asked whether it holds one.'
          : 'No dead letter for this event.',
      )
  /** The page around the event's panel: the search box holding its id, the way back, then `children`. */
  const show = (...children: Child[]) =>
    view.replaceChildren(
      el('h2', {}, 'Events'),
      searchBox(eventId),
      back,
      el('section', { class: 'panel', id: 'timeline', 'data-event-id': eventId }, ...children),
    )
  if (!timeline) {
    show(
      el(
        'p',
        { class: 'empty', id: 'not-found' },
        `No answer recorded for ${eventId} (${keptLine(data.retentionHours)}).`,
      ),
      data.gaps?.length
        ? gapsNote(
            data.gaps,
            'The journal could not keep every answer then (an instance could not write it long enough to fill its buffer): this event may have been answered in one of these spans. Otherwise the service did not reach you, the request was not signed with your secret, or the id differs.',
          )
        : el(
            'p',
            { class: 'note' },
            'Not answered by any instance sharing the journal within that time: the service did not reach you, the request was not signed with your secret, or the id differs.',
          ),
      letterLine,
      result,
    )
    return
  }
  const fact = (term: string, value: string, id?: string) => [el('dt', {}, term), el('dd', { id }, value)]
  const handled = timeline.handledAt ? timeline.answers.find((answer) => answer.at === timeline.handledAt) : undefined
  const dropped = timeline.answers.filter((a) => a.outcome === 'journal_dropped').reduce((n, a) => n + a.copies, 0)
  const notYet =
    dropped > 0 || data.gaps?.length
      ? 'not recorded: answers of this event may be missing (see below)'
      : 'not yet: no answer processed it'
  show(
    el('h2', { class: 'id' }, eventId),
    el(
      'dl',
      { class: 'facts' },
      ...fact('Event type', timeline.eventType),
      ...fact('Created (signed)', when(timeline.createdAt)),
      ...fact('Handled', handled ? `${when(handled.at)} by ${handled.instance}` : notYet, 'handled-at'),
      ...fact('Answers', String(timeline.answers.length)),
    ),
    el('h3', {}, 'Every answer, oldest first'),
    answersTable('answers', timeline.answers, false),
    dropped > 0
      ? el(
          'p',
          { class: 'note', id: 'journal-dropped' },
          `${dropped} answer${dropped === 1 ? '' : 's'} of this event could not be kept by the journal (journal_dropped).`,
        )
      : null,
    gapsNote(
      data.gaps,
      'Answers of any event were dropped in these spans since it was created: some of its may be missing.',
    ),
    letterLine,
    result,
  )
}
