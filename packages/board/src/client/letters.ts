// The dead-letter list: filters in the address (#/?code=...), pages, selection, replay and delete.
// Type only: erased from the compiled module (verbatimModuleSyntax), so the page loads nothing of core.
import type { ReplayReport } from '@payhooks/core'
import { get, type Outcome, post, type Session, type Summary } from './api.js'
import { el, notice, noticeAfterNavigation, noticeNext, when } from './dom.js'
import { fromInput, inputValue, zoneName } from './time.js'

const PAGE = 50
const FILTERS = ['code', 'eventType', 'from', 'to', 'eventId', 'status'] as const

/** A replay report as the API answers it: core's fields (one definition), `null` where core has `undefined`. */
type Report = {
  [Field in keyof ReplayReport]-?:
    | Exclude<ReplayReport[Field], undefined>
    | (undefined extends ReplayReport[Field] ? null : never)
}

interface Batch {
  outcomes: Outcome[]
  report: Report
  run: Report
  total: number | null
  remaining: number | null
  cursor: string | null
}

/** A console's figures in words (what it tried), and the run's when other consoles shared it or letters left it. */
export function reportLine(mine: Report, run: Report): string {
  const parts = [
    [mine.processed, 'processed'],
    [mine.duplicate, 'duplicate'],
    [mine.queued, 'queued'],
    [mine.failed, 'failed (left parked)'],
    [mine.inProgress, 'in progress elsewhere'],
    [mine.notFound, 'not found'],
  ]
    .filter(([count]) => count)
    .map(([count, what]) => `${count} ${what}`)
  const shared = mine.triedByOthers
    ? ` Another console replayed the same letters meanwhile: ${mine.triedByOthers} of them, ${run.tried} tried in all.`
    : ''
  const gone = run.done && run.gone ? ` ${run.gone} left the set meanwhile (deleted, replayed or parked again).` : ''
  return `Replay: ${parts.join(', ') || 'nothing to replay'}${shared}${gone}`
}

/**
 * Replays the letters matching `filter` batch after batch (the server replays a few per request), showing the
 * progress in `box`, with a button that stops after the batch under way.
 */
async function replayInBatches(
  box: HTMLElement,
  filter: Record<string, string>,
  count: number,
  session: Session,
): Promise<void> {
  let stopped = false
  const bar = el('progress', { max: String(count), value: '0', id: 'replay-progress' })
  const line = el('span', { id: 'replay-progress-text' }, `Replaying 0 of ${count}…`)
  const stop = el('button', { type: 'button', id: 'replay-stop' }, 'Stop')
  stop.addEventListener('click', () => {
    stopped = true
    stop.disabled = true
    line.textContent = `${line.textContent} stopping after this batch…`
  })
  box.replaceChildren(el('div', { class: 'progress' }, bar, line, stop))
  box.hidden = false
  const all: Outcome[] = []
  let body: Record<string, unknown> = { filter, confirmCount: count }
  let last: Batch | undefined
  try {
    for (;;) {
      last = await post<Batch>('dead-letters/replay-matching', body, session.csrfHeader)
      all.push(...last.outcomes)
      bar.value = last.run.tried
      line.textContent = `Replayed ${last.run.tried} of ${last.total ?? count}${last.run.failed ? `, ${last.run.failed} failed (left parked)` : ''}…`
      if (last.cursor === null || stopped) break
      body = { filter, cursor: last.cursor }
    }
  } catch (error) {
    noticeNext(`Replay stopped: ${(error as Error).message}. ${outcomeLine(all)}`, 'error')
    return
  }
  const ok = all.every((o) => o.status === 'processed' || o.status === 'duplicate')
  const summary = last ? reportLine(last.report, last.run) : outcomeLine(all)
  const failed = all.find((o) => o.status === 'failed')
  noticeNext(
    `${stopped && last?.cursor ? `Stopped after ${all.length} of ${count}. ` : ''}${summary}${failed?.code ? ` (${failed.eventId}: ${failed.code})` : ''}`,
    ok && !(stopped && last?.cursor) ? 'ok' : 'error',
  )
}

export function outcomeLine(outcomes: Outcome[]): string {
  const counts = new Map<string, number>()
  for (const outcome of outcomes) counts.set(outcome.status, (counts.get(outcome.status) ?? 0) + 1)
  const parts = [...counts].map(([status, count]) => `${count} ${status}`)
  const failed = outcomes.find((o) => o.status === 'failed')
  return `Replay: ${parts.join(', ') || 'nothing to replay'}${failed?.code ? ` (${failed.eventId}: ${failed.code})` : ''}`
}

function filterForm(params: URLSearchParams): HTMLFormElement {
  const select = (name: string, label: string, options: [string, string][]) =>
    el(
      'select',
      { name, 'aria-label': label },
      ...options.map(([value, text]) => el('option', { value, selected: params.get(name) === value }, text)),
    )
  const input = (name: string, label: string, type = 'search') =>
    el('input', { name, type, 'aria-label': label, placeholder: label, value: params.get(name) ?? '' })
  // In the zone the times are shown in: the address holds the ISO time, the input that time as the operator reads it.
  const dateInput = (name: string, label: string) => {
    const field = el('input', { name, type: 'datetime-local', 'aria-label': label })
    field.value = inputValue(params.get(name))
    return field
  }
  const form = el(
    'form',
    { class: 'filters', role: 'search', id: 'filters' },
    select('status', 'status', [
      ['parked', 'parked'],
      ['replayed', 'replayed'],
      ['all', 'all'],
    ]),
    select('code', 'code', [
      ['', 'any code'],
      ['schema_mismatch', 'schema_mismatch'],
      ['handler_failed', 'handler_failed'],
      ['stale_event', 'stale_event'],
    ]),
    input('eventType', 'event type'),
    input('eventId', 'event id'),
    el('label', {}, `from (${zoneName()})`, dateInput('from', 'parked from')),
    el('label', {}, `to (${zoneName()})`, dateInput('to', 'parked before')),
    el('button', { type: 'submit' }, 'Filter'),
  )
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const next = new URLSearchParams()
    for (const name of FILTERS) {
      const field = form.elements.namedItem(name) as HTMLInputElement | null
      let value = field?.value ?? ''
      if (value && (name === 'from' || name === 'to')) value = fromInput(value)
      if (value && !(name === 'status' && value === 'parked')) next.set(name, value)
    }
    location.hash = `#/?${next}`
  })
  return form
}

interface Page {
  letters: Summary[]
  hasMore: boolean
  /** Keyset cursors of the page's ends: the next page older (`after`) or newer (`before`), null at an end. */
  older: string | null
  newer: string | null
}

export async function showLetters(view: HTMLElement, session: Session, params: URLSearchParams): Promise<void> {
  // Pages go by keyset cursor (`after`/`before`), so a page far down costs what the first does; `page` is only
  // the number shown.
  const number = Math.max(1, Number(params.get('page') ?? 1) || 1)
  const query = new URLSearchParams(params)
  query.delete('page')
  for (const name of ['from', 'to']) {
    const value = query.get(name)
    if (value) query.set(name, new Date(value).toISOString())
  }
  query.set('limit', String(PAGE))
  const page = await get<Page>(`dead-letters?${query}`)
  const selected = new Set<string>()
  const filterOnly = new URLSearchParams()
  for (const name of ['code', 'eventType', 'from', 'to'] as const) {
    const value = query.get(name)
    if (value) filterOnly.set(name, value)
  }
  const showsParked = (params.get('status') ?? 'parked') === 'parked' && !params.get('eventId')

  const result = el('p', { class: 'result', id: 'result', role: 'status' })
  const confirm = el('div', { class: 'confirm', id: 'confirm', hidden: true })
  const replaySelected = el('button', { type: 'button', id: 'replay-selected', disabled: true }, 'Replay selected')
  const deleteSelected = el(
    'button',
    { type: 'button', id: 'delete-selected', class: 'danger', disabled: true },
    'Delete selected',
  )
  const replayMatching = el('button', { type: 'button', id: 'replay-matching' }, 'Replay all matching…')
  const actions = session.readOnly
    ? null
    : el(
        'div',
        { class: 'actions' },
        replaySelected,
        showsParked && replayMatching,
        session.canDelete && deleteSelected,
        confirm,
      )

  const refresh = () => {
    replaySelected.disabled = selected.size === 0
    deleteSelected.disabled = selected.size === 0
  }
  const rows = page.letters.map((letter) => {
    const box = el('input', { type: 'checkbox', 'aria-label': `select ${letter.eventId}` })
    box.addEventListener('change', () => {
      if (box.checked) selected.add(letter.eventId)
      else selected.delete(letter.eventId)
      refresh()
    })
    return el(
      'tr',
      { 'data-event-id': letter.eventId },
      session.readOnly ? null : el('td', {}, box),
      el('td', {}, el('a', { href: `#/letter/${encodeURIComponent(letter.eventId)}`, class: 'id' }, letter.eventId)),
      el('td', {}, letter.eventType),
      el('td', {}, el('span', { class: `badge code-${letter.code}` }, letter.code)),
      el('td', { class: 'reason' }, letter.reason),
      el('td', {}, String(letter.parkCount)),
      el('td', {}, when(letter.parkedAt)),
      el('td', {}, el('span', { class: `badge status-${letter.status}` }, letter.status)),
    )
  })

  replaySelected.addEventListener('click', async () => {
    replaySelected.disabled = true
    const { outcomes } = await post<{ outcomes: Outcome[] }>(
      'dead-letters/replay',
      { eventIds: [...selected] },
      session.csrfHeader,
    )
    notice(
      outcomeLine(outcomes),
      outcomes.every((o) => o.status === 'processed' || o.status === 'duplicate') ? 'ok' : 'error',
    )
    await showLetters(view, session, params)
  })
  deleteSelected.addEventListener('click', () => {
    const ids = [...selected]
    const yes = el('button', { type: 'button', class: 'danger', id: 'confirm-yes' }, `Delete ${ids.length}`)
    const no = el('button', { type: 'button', id: 'confirm-no' }, 'Cancel')
    confirm.replaceChildren(`Delete ${ids.length} dead letter(s) for good? Their events will not be handled.`, yes, no)
    confirm.hidden = false
    no.addEventListener('click', () => {
      confirm.hidden = true
    })
    yes.addEventListener('click', async () => {
      const answer = await post<{ deleted: string[] }>('dead-letters/delete', { eventIds: ids }, session.csrfHeader)
      notice(`Deleted ${answer.deleted.length} dead letter(s).`, 'ok')
      await showLetters(view, session, params)
    })
  })
  replayMatching.addEventListener('click', async () => {
    const { count } = await get<{ count: number }>(`dead-letters/count?${filterOnly}`)
    const yes = el('button', { type: 'button', class: 'primary', id: 'confirm-yes' }, `Replay ${count}`)
    const no = el('button', { type: 'button', id: 'confirm-no' }, 'Cancel')
    if (count === 0) {
      notice('No parked letter matches this filter.', 'info')
      return
    }
    confirm.replaceChildren(`Replay all ${count} parked letter(s) matching this filter, oldest first?`, yes, no)
    confirm.hidden = false
    no.addEventListener('click', () => {
      confirm.hidden = true
    })
    yes.addEventListener('click', () => {
      void replayInBatches(confirm, Object.fromEntries(filterOnly), count, session)
        .then(() => showLetters(view, session, params))
        .then(noticeAfterNavigation)
    })
  })

  const pageLink = (to: number, cursor: [string, string] | null, label: string) => {
    const next = new URLSearchParams(params)
    for (const name of ['after', 'before', 'offset', 'page']) next.delete(name)
    if (cursor && to > 1) {
      next.set(cursor[0], cursor[1])
      next.set('page', String(to))
    }
    return el('a', { href: `#/?${next}` }, label)
  }
  const first = (number - 1) * PAGE
  const head = ['Event id', 'Type', 'Code', 'Reason', 'Times parked', 'Last parked at', 'Status']
  view.replaceChildren(
    el('h2', {}, 'Dead letters'),
    filterForm(params),
    actions ?? '',
    page.letters.length === 0
      ? el('p', { class: 'empty', id: 'no-letters' }, 'No dead letter matches.')
      : el(
          'table',
          { id: 'letters' },
          el(
            'thead',
            {},
            el('tr', {}, session.readOnly ? null : el('th', {}, ''), ...head.map((h) => el('th', {}, h))),
          ),
          el('tbody', {}, ...rows),
        ),
    el(
      'div',
      { class: 'pager' },
      number > 1 && pageLink(number - 1, page.newer === null ? null : ['before', page.newer], '← newer'),
      page.letters.length > 0 ? `${first + 1}–${first + page.letters.length}` : '',
      page.older !== null && pageLink(number + 1, ['after', page.older], 'older →'),
    ),
    result,
  )
}
