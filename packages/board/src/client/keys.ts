// Ordering keys held now: by which event, for how long, until when. Read from the store, so every instance shows
// the same; a store that cannot list them says so.
import { get } from './api.js'
import { el } from './dom.js'

interface HeldKeys {
  supported: boolean
  at?: string
  keys: { key: string; eventId: string; eventType: string; since: string; expiresAt: string }[]
}

function duration(ms: number): string {
  const seconds = Math.round(ms / 1000)
  if (seconds < 0) return 'expired'
  if (seconds < 120) return `${seconds} s`
  if (seconds < 7200) return `${Math.floor(seconds / 60)} min`
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`
}

export async function showKeys(view: HTMLElement): Promise<void> {
  const data = await get<HeldKeys>('ordering-keys')
  const heading = el('h2', {}, 'Ordering keys held')
  if (!data.supported || !data.at) {
    view.replaceChildren(
      heading,
      el(
        'p',
        { class: 'note', id: 'no-keys' },
        'This store does not list held keys (it needs webhooks.heldKeys() and a store that keeps ordering fences).',
      ),
    )
    return
  }
  const now = Date.parse(data.at)
  view.replaceChildren(
    heading,
    el('p', { class: 'note' }, 'Held in the store: every instance shows the same keys.'),
    data.keys.length === 0
      ? el('p', { class: 'empty', id: 'no-keys' }, 'No ordering key is held.')
      : el(
          'table',
          { id: 'keys' },
          el(
            'thead',
            {},
            el('tr', {}, ...['Key', 'Event', 'Type', 'Held for', 'Expires in'].map((h) => el('th', {}, h))),
          ),
          el(
            'tbody',
            {},
            ...data.keys.map((held) =>
              el(
                'tr',
                { 'data-key': held.key },
                el('td', { class: 'id' }, held.key),
                el('td', { class: 'id' }, held.eventId),
                el('td', {}, held.eventType),
                el('td', {}, duration(now - Date.parse(held.since))),
                el('td', {}, duration(Date.parse(held.expiresAt) - now)),
              ),
            ),
          ),
        ),
  )
}
