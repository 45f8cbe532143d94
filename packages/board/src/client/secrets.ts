// Secret rotation: verifications per secret per hour over 72 hours, and when each was last used, so the old one
// can be retired. Counted in this process since it started; the OpenTelemetry metric covers every instance.
import { get } from './api.js'
import { bars } from './bars.js'
import { el, when } from './dom.js'

interface Secrets {
  supported: boolean
  since?: string
  at?: string
  from?: string
  secrets?: { index: number; label: string | null; total: number; perHour: number[]; lastUsedAt: string }[]
}

function ago(iso: string, now: string): string {
  const minutes = Math.floor((Date.parse(now) - Date.parse(iso)) / 60_000)
  if (minutes < 1) return 'just now'
  if (minutes < 120) return `${minutes} min ago`
  return `${Math.floor(minutes / 60)} h ago`
}

export async function showSecrets(view: HTMLElement): Promise<void> {
  const data = await get<Secrets>('secrets')
  const heading = el('h2', {}, 'Secret rotation')
  if (!data.supported || !data.secrets || !data.since || !data.at) {
    view.replaceChildren(
      heading,
      el('p', { class: 'note', id: 'no-secrets' }, 'This receiver has no stats() (a newer @payhooks/core has).'),
    )
    return
  }
  const { at, since } = data
  const rows = data.secrets.map((secret) =>
    el(
      'tr',
      { 'data-index': String(secret.index) },
      el('td', {}, String(secret.index)),
      el('td', {}, secret.label ?? '—'),
      el('td', {}, String(secret.total)),
      el('td', {}, `${when(secret.lastUsedAt)} (${ago(secret.lastUsedAt, at)})`),
      el(
        'td',
        { class: 'chart' },
        bars(secret.perHour, (index) => `${72 - index} h ago`, `secret-${secret.index}-hours`),
      ),
    ),
  )
  view.replaceChildren(
    heading,
    el(
      'p',
      { class: 'note', id: 'secrets-scope' },
      `Counted in this process since ${when(since)}: other instances count their own, and nothing before that time is known here. For every instance, use the OpenTelemetry metric payhooks.secret.verified (by payhooks.secret.index and label) of @payhooks/otel.`,
    ),
    data.secrets.length === 0
      ? el('p', { class: 'empty', id: 'no-secrets' }, 'No delivery verified since this process started.')
      : el(
          'table',
          { id: 'secrets' },
          el(
            'thead',
            {},
            el(
              'tr',
              {},
              ...['Index', 'Label', 'Verified (72 h)', 'Last used', 'Per hour, 72 h (oldest left)'].map((h) =>
                el('th', {}, h),
              ),
            ),
          ),
          el('tbody', {}, ...rows),
        ),
    el(
      'p',
      { class: 'hint' },
      'To retire an old secret: once it has verified nothing for a while on every instance (the service retries a failed delivery hourly for 72 hours, signed with the secret of its time), remove it from the list. A secret not listed here has verified nothing in this process since it started.',
    ),
  )
}
