import { get } from './api.js'
import { el } from './dom.js'

interface Overview {
  deadLetters: { parked: number; byCode: Record<string, number>; durable: boolean | null }
  health: { ready: boolean; checks: Record<string, unknown>[] } | null
}

export async function showOverview(view: HTMLElement): Promise<void> {
  const data = await get<Overview>('overview')
  const card = (value: string, label: string) =>
    el('div', { class: 'card' }, el('div', { class: 'value' }, value), el('div', { class: 'label' }, label))
  const { deadLetters, health } = data
  view.replaceChildren(
    el('h2', {}, 'Overview'),
    el(
      'div',
      { class: 'cards', id: 'counts' },
      card(String(deadLetters.parked), 'dead letters parked'),
      ...Object.entries(deadLetters.byCode).map(([code, count]) => card(String(count), code)),
    ),
    el(
      'p',
      { class: 'note' },
      deadLetters.durable === false
        ? 'These dead letters live in this process’s memory: other instances have their own.'
        : 'Dead letters are shared through the store: every instance shows the same list.',
    ),
    el(
      'section',
      { class: 'panel', id: 'health' },
      el('h3', {}, health ? `Health: ${health.ready ? 'ready' : 'not ready'}` : 'Health'),
      health
        ? el(
            'ul',
            {},
            ...health.checks.map((check) =>
              el(
                'li',
                { class: `check ${check.ok ? 'ok' : check.severity === 'warning' ? 'warn' : 'fail'}` },
                String(check.name),
                typeof check.latencyMs === 'number' ? ` (${check.latencyMs} ms)` : '',
                ...['detail', 'fix']
                  .filter((key) => typeof check[key] === 'string')
                  .map((key) => ` — ${check[key] as string}`),
              ),
            ),
          )
        : el('p', { class: 'note' }, 'This receiver has no health() (a newer @payhooks/core has).'),
    ),
  )
}
