import type { DashboardClock, DashboardEvents } from '../types.js'
import { byId, clockTime, h } from './dom.js'
import { now, state } from './state.js'

export function setClock(next: DashboardClock): void {
  state.clock = next
  state.clockReceived = performance.now()
  byId('clock-kind').textContent = next.manual ? 'manual clock' : 'real clock'
  byId('advance').hidden = !next.manual
  renderClock()
}

export function renderClock(): void {
  byId('clock-now').textContent = `${clockTime(now(), true)} UTC`
}

/** The emit form's event types and merchants, keeping what was chosen. */
export function fillEmitForm(hello: DashboardEvents['hello']): void {
  const types = byId<HTMLSelectElement>('emit-type')
  const merchants = byId<HTMLSelectElement>('emit-merchant')
  const keepType = types.value
  const keepMerchant = merchants.value
  types.replaceChildren(...hello.eventTypes.map((type) => h('option', { value: type }, type)))
  merchants.replaceChildren(...hello.merchantIds.map((id) => h('option', { value: String(id) }, String(id))))
  if (keepType) types.value = keepType
  else if (hello.eventTypes.includes('transaction_settled')) types.value = 'transaction_settled'
  if (keepMerchant) merchants.value = keepMerchant
}

export function renderSubscriptions(): void {
  const { subscriptions } = state
  byId('subscription-count').textContent = String(subscriptions.length)
  const list = byId('subscriptions')
  if (subscriptions.length === 0) {
    list.replaceChildren(h('li', { class: 'empty' }, 'None yet. Create one with POST /ps/webhook/subscription.'))
    return
  }
  list.replaceChildren(
    ...subscriptions.map((s) =>
      h(
        'li',
        { class: `subscription${s.is_active ? '' : ' inactive'}`, 'data-subscription-id': s.id },
        h('code', { class: 'url' }, s.url),
        h('span', { class: 'types' }, s.event_types.join(', ')),
        h('span', { class: 'meta' }, `${s.owner} · ${s.is_active ? 'active' : 'inactive'} · ${s.id}`),
      ),
    ),
  )
}
