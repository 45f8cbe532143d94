export type Child = Node | string | null | undefined | false

/** A new element with `attributes` (`true`: present and empty) and `children` (falsy ones skipped). */
export function h(tag: string, attributes: Record<string, string | boolean | undefined> = {}, ...children: Child[]) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === true) element.setAttribute(name, '')
    else if (typeof value === 'string') element.setAttribute(name, value)
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) element.append(child)
  }
  return element
}

export function byId<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T
}

const pad = (n: number) => String(n).padStart(2, '0')

/** `time` as UTC `hh:mm:ss`, or `yyyy-mm-dd hh:mm:ss`. */
export function clockTime(time: number, withDate = false): string {
  const d = new Date(time)
  const hms = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
  return withDate ? `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${hms}` : hms
}

/** `ms` in words: `40 s`, `5 min`, `2 h`, `1 h 30 min`. */
export function duration(ms: number): string {
  const minutes = Math.round(Math.abs(ms) / 60_000)
  if (minutes < 1) return `${Math.round(Math.abs(ms) / 1000)} s`
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`
}

let noticeTimer: ReturnType<typeof setTimeout> | undefined

/** Shows `text` under the header; an `info` one goes away after five seconds, an empty one at once. */
export function notice(text: string, kind: 'info' | 'error' = 'info'): void {
  const element = byId('notice')
  element.textContent = text
  element.dataset.kind = kind
  element.hidden = text === ''
  clearTimeout(noticeTimer)
  if (kind === 'info' && text !== '') noticeTimer = setTimeout(() => notice(''), 5000)
}
