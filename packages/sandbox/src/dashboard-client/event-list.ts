import type { SandboxLogEntry } from '../types.js'
import { api } from './api.js'
import { badge, deliveryView } from './delivery-view.js'
import { byId, clockTime, h, notice } from './dom.js'
import { state } from './state.js'

/** `pending` while a delivery is, `delivered` when all are, `none` without any, else `failed`. */
function entryState(entry: SandboxLogEntry): string {
  if (entry.deliveries.length === 0) return 'none'
  if (entry.deliveries.some((d) => d.state === 'pending')) return 'pending'
  return entry.deliveries.every((d) => d.state === 'delivered') ? 'delivered' : 'failed'
}

/** The type filter's choices: the types the sandbox has samples of, and any other type in the log. */
export function fillTypeFilter(): void {
  const types = byId<HTMLSelectElement>('filter-type')
  const listed = new Set([...state.sampleTypes, ...Array.from(state.entries.values(), (entry) => entry.eventType)])
  if (types.options.length === listed.size + 1) return
  const keep = types.value
  types.replaceChildren(
    h('option', { value: '' }, 'all event types'),
    ...[...listed].sort().map((type) => h('option', { value: type }, type)),
  )
  types.value = keep
}

/** Whether `entry` passes the filters above the list: its type, a state or an answer, and part of its id. */
function shown(entry: SandboxLogEntry): boolean {
  const type = byId<HTMLSelectElement>('filter-type').value
  const status = byId<HTMLSelectElement>('filter-status').value
  const id = byId<HTMLInputElement>('filter-id').value.trim().toLowerCase()
  if (type && entry.eventType !== type) return false
  if (id && !entry.eventId.toLowerCase().includes(id)) return false
  if (!status) return true
  if (['pending', 'delivered', 'failed', 'none'].includes(status)) return entryState(entry) === status
  const attempts = entry.deliveries.flatMap((d) => d.attempts)
  if (status === 'error') return attempts.some((a) => a.status === undefined)
  return attempts.some((a) => a.status !== undefined && String(a.status).startsWith(status))
}

function payload(entry: SandboxLogEntry): HTMLElement {
  const details = h(
    'details',
    { class: 'payload', open: state.openPayloads.has(entry.eventId) },
    h('summary', {}, `Signed payload (${entry.body.length} bytes)`),
    h('pre', {}, entry.body),
  ) as HTMLDetailsElement
  details.addEventListener('toggle', () => {
    if (details.open) state.openPayloads.add(entry.eventId)
    else state.openPayloads.delete(entry.eventId)
  })
  return details
}

/** An event's card: its state, type, id and merchant, a resend button, then each delivery and the payload. */
function card(entry: SandboxLogEntry): HTMLElement {
  const entryStatus = entryState(entry)
  const resend = h('button', { type: 'button', class: 'resend', disabled: entry.deliveries.length === 0 }, 'Resend')
  resend.addEventListener('click', (event) => {
    event.preventDefault()
    api('/_sandbox/resend', { ids: [entry.eventId] }).then(
      (answer) => notice(`Resent ${entry.eventId}: ${(answer.data as { sends: number }).sends} send(s).`),
      (error: Error) => notice(error.message, 'error'),
    )
  })
  const details = h(
    'details',
    { open: !state.closed.has(entry.eventId) },
    h(
      'summary',
      {},
      badge(entryStatus, entryStatus === 'none' ? 'sent nowhere' : entryStatus),
      h('strong', { class: 'type' }, entry.eventType),
      h('code', { class: 'id' }, entry.eventId),
      h(
        'span',
        { class: 'meta' },
        `merchant ${entry.merchantId} · ${clockTime(entry.emittedTime, true)} UTC · ${entry.deliveries.length} deliver${entry.deliveries.length === 1 ? 'y' : 'ies'}`,
      ),
      entry.createdAt !== undefined && backdated(entry.createdAt),
      resend,
    ),
    h(
      'div',
      { class: 'event-body' },
      entry.deliveries.length === 0 &&
        h('p', { class: 'warning' }, 'No active subscription got this event, so nothing was sent.'),
      ...entry.deliveries.map(deliveryView),
      payload(entry),
    ),
  )
  details.addEventListener('toggle', () => {
    if ((details as HTMLDetailsElement).open) state.closed.delete(entry.eventId)
    else state.closed.add(entry.eventId)
  })
  return h('li', { class: 'event', 'data-event-id': entry.eventId, 'data-state': entryStatus }, details)
}

/** The mark of an event emitted with a `created_at` of its own: how long before now, by the wall clock. */
function backdated(createdAt: string): HTMLElement {
  const hours = Math.round((Date.now() - Date.parse(createdAt)) / 3_600_000)
  const ago = hours >= 1 ? `${hours} h ago` : hours <= -1 ? `${-hours} h ahead` : 'now'
  return h('span', { class: 'badge backdated', title: `emitted with created_at ${createdAt}` }, `created_at ${ago}`)
}

export function renderCount(): void {
  const showing = byId('events').childElementCount
  const total = state.entries.size
  byId('event-count').textContent = showing === total ? String(total) : `${showing} of ${total}`
  // Until the stream's first message the log is unknown, not empty ("connecting…" says so).
  byId('no-events').hidden = !state.greeted || total > 0
  byId('no-match').hidden = total === 0 || showing > 0
}

export function renderEvents(): void {
  // Newest first; events emitted at the same clock time (a manual clock) in the reverse of their log order.
  const sorted = [...state.entries.values()]
    .reverse()
    .filter(shown)
    .sort((a, b) => b.emittedTime - a.emittedTime)
  byId('events').replaceChildren(...sorted.map(card))
  renderCount()
}

/** Shows a new or changed entry in its place, or takes it away when the filters hide it now. */
export function upsert(entry: SandboxLogEntry): void {
  const known = state.entries.has(entry.eventId)
  state.entries.set(entry.eventId, entry)
  if (!known) fillTypeFilter()
  const list = byId('events')
  const old = list.querySelector(`li.event[data-event-id="${CSS.escape(entry.eventId)}"]`)
  if (!shown(entry)) old?.remove()
  else if (old) old.replaceWith(card(entry))
  else if (!known) list.prepend(card(entry))
  else renderEvents() // it matches the filters now: put it back in its place
  renderCount()
}

/** Takes an entry the sandbox dropped from its log off the page. */
export function remove(eventId: string): void {
  state.entries.delete(eventId)
  document.querySelector(`li.event[data-event-id="${CSS.escape(eventId)}"]`)?.remove()
  renderCount()
}
