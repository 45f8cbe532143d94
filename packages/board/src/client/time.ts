// Every time the board shows carries its zone: the browser's (with its name, `GMT+1`, `CET`...) or UTC, the
// operator's choice, kept in the browser. "On Tuesday" then means one day for everyone reading the same page.
const KEY = 'payhooks-board-times'

export type Zone = 'local' | 'utc'

let chosen: Zone | undefined

/** The zone times are shown in: UTC once chosen (kept in the browser), else the browser's. */
export function zone(): Zone {
  if (chosen !== undefined) return chosen
  try {
    return localStorage.getItem(KEY) === 'utc' ? 'utc' : 'local'
  } catch {
    return 'local'
  }
}

export function setZone(next: Zone): void {
  try {
    localStorage.setItem(KEY, next)
  } catch {
    // Storage refused (a private window's policy): the choice lasts until the page is reloaded.
  }
  chosen = next
}

const timeZone = () => (zone() === 'utc' ? 'UTC' : undefined)

/** The zone's name as times show it: `UTC`, or the browser's short name (`GMT+1`, `CET`, `PST`). */
export function zoneName(): string {
  if (zone() === 'utc') return 'UTC'
  const part = new Intl.DateTimeFormat(undefined, { timeZoneName: 'short' })
    .formatToParts(new Date())
    .find((item) => item.type === 'timeZoneName')
  return part?.value ?? 'local time'
}

/** A time to the second with its zone (`Nov 28, 2026, 4:41:11 PM UTC`); `—` for none. */
export function when(iso: string | null): string {
  if (!iso) return '—'
  return new Date(iso).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
    timeZone: timeZone(),
    timeZoneName: 'short',
  })
}

/** A time to the millisecond with its zone: answers of one event often fall within one second. */
export function precise(iso: string): string {
  return new Date(iso).toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: 'numeric',
    minute: '2-digit',
    second: '2-digit',
    fractionalSecondDigits: 3,
    timeZone: timeZone(),
    timeZoneName: 'short',
  })
}

/** An ISO time as a `datetime-local` input shows it, in the zone chosen. */
export function inputValue(iso: string | null): string {
  if (!iso) return ''
  const date = new Date(iso)
  const offset = zone() === 'utc' ? 0 : date.getTimezoneOffset()
  return new Date(date.getTime() - offset * 60_000).toISOString().slice(0, 16)
}

/** What a `datetime-local` input holds, read in the zone chosen, as an ISO time. */
export function fromInput(value: string): string {
  return new Date(zone() === 'utc' ? `${value}Z` : value).toISOString()
}
