// The sandbox dashboard's browser entry, served as /_sandbox/ui/app.js (a module, like the files it imports;
// `@payhooks/core/service-contract` comes through the page's import map). It wires the page's forms and
// buttons, then opens the event stream that feeds everything else.
import type { SandboxLogEntry } from '../types.js'
import { api, keepToken, takeToken } from './api.js'
import { byId, notice } from './dom.js'
import { renderEvents, upsert } from './event-list.js'
import { renderClock } from './panels.js'
import { state } from './state.js'
import { connect } from './stream.js'

takeToken()

for (const id of ['filter-type', 'filter-status', 'filter-id']) byId(id).addEventListener('input', renderEvents)
byId<HTMLFormElement>('filters').addEventListener('submit', (event) => event.preventDefault())

byId<HTMLFormElement>('emit').addEventListener('submit', (event) => {
  event.preventDefault()
  const form = event.currentTarget as HTMLFormElement
  const fields = new FormData(form)
  const text = String(fields.get('data') ?? '').trim()
  const result = byId('emit-result')
  let data: unknown
  try {
    data = text === '' ? undefined : JSON.parse(text)
  } catch {
    result.dataset.kind = 'error'
    result.textContent = 'Data must be JSON, such as {"settlement_amount": 12.5}.'
    return
  }
  const button = form.querySelector('button') as HTMLButtonElement
  button.disabled = true
  api('/_sandbox/emit', {
    event_type: fields.get('event_type'),
    merchant_id: Number(fields.get('merchant_id')),
    ...(data === undefined ? {} : { data }),
  })
    .then(
      (answer) => {
        const entry = answer.data as SandboxLogEntry
        upsert(entry)
        result.dataset.kind = answer.warning ? 'warning' : 'ok'
        result.textContent = answer.warning
          ? `${entry.eventId}: ${String(answer.warning)}`
          : `${entry.eventId} sent to ${String(answer.deliveries)} subscription(s).`
      },
      (error: Error) => {
        result.dataset.kind = 'error'
        result.textContent = error.message
      },
    )
    .finally(() => {
      button.disabled = false
    })
})

for (const button of Array.from(document.querySelectorAll<HTMLButtonElement>('#advance button[data-ms]'))) {
  button.addEventListener('click', () => {
    const buttons = Array.from(document.querySelectorAll<HTMLButtonElement>('#advance button'))
    for (const b of buttons) b.disabled = true
    notice(`Advancing ${button.textContent}…`)
    api('/_sandbox/clock/advance', { ms: Number(button.dataset.ms) })
      .then(
        () => notice(''),
        (error: Error) => notice(error.message, 'error'),
      )
      .finally(() => {
        for (const b of buttons) b.disabled = false
      })
  })
}

byId<HTMLFormElement>('token-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const value = String(new FormData(event.currentTarget as HTMLFormElement).get('token') ?? '').trim()
  if (value === '') return
  keepToken(value)
  byId('token-form').hidden = true
  connect()
})

setInterval(() => {
  if (!state.clock.manual) renderClock()
}, 1000)
connect()
