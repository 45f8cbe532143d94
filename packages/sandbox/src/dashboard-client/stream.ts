import type { DashboardEvents } from '../types.js'
import { api, setLive } from './api.js'
import { byId } from './dom.js'
import { fillTypeFilter, remove, renderEvents, upsert } from './event-list.js'
import { fillEmitForm, renderSubscriptions, setClock } from './panels.js'
import { state } from './state.js'

function greet(hello: DashboardEvents['hello']): void {
  byId('token-form').hidden = true
  state.entries.clear()
  for (const entry of hello.log) state.entries.set(entry.eventId, entry)
  // Older events start folded: the newest three are what one came to see.
  if (!state.greeted) for (const entry of hello.log.slice(0, -3)) state.closed.add(entry.eventId)
  state.greeted = true
  state.subscriptions = hello.subscriptions
  setClock(hello.clock)
  fillEmitForm(hello)
  state.sampleTypes = hello.eventTypes
  fillTypeFilter()
  byId('chaos').textContent = hello.chaos ? `chaos on (seed ${hello.chaos.seed})` : 'chaos off'
  byId('total').textContent = hello.total > hello.log.length ? `latest ${hello.log.length} of ${hello.total}` : ''
  renderSubscriptions()
  renderEvents()
}

/** Opens the sandbox's event stream (again): `hello` redraws everything, the other events what changed. */
export function connect(): void {
  state.source?.close()
  setLive('connecting')
  const { token } = state
  const stream = new EventSource(`/_sandbox/events${token ? `?token=${encodeURIComponent(token)}` : ''}`)
  state.source = stream
  stream.addEventListener('open', () => setLive('live'))
  stream.addEventListener('error', () => {
    if (stream !== state.source) return
    setLive('offline')
    // A refused stream (401) is closed for good; ask a plain route why, then try again later.
    if (stream.readyState === EventSource.CLOSED) {
      api('/_sandbox/clock').then(
        () => setTimeout(connect, 1000),
        () => {
          if (byId('token-form').hidden) setTimeout(connect, 2000)
        },
      )
    }
  })
  const on = <K extends keyof DashboardEvents>(name: K, handle: (data: DashboardEvents[K]) => void) =>
    stream.addEventListener(name, (event) =>
      handle(JSON.parse((event as MessageEvent<string>).data) as DashboardEvents[K]),
    )
  on('hello', greet)
  on('entry', upsert)
  on('removed', ({ eventId }) => remove(eventId))
  on('subscriptions', (list) => {
    state.subscriptions = list
    renderSubscriptions()
    renderEvents()
  })
  on('clock', (next) => {
    setClock(next)
    renderEvents()
  })
}
