// Every value from the server goes into text nodes (textContent), never into HTML.
export type Child = Node | string | null | undefined | false

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    element.setAttribute(name, value === true ? '' : value)
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    element.append(typeof child === 'string' ? document.createTextNode(child) : child)
  }
  return element
}

export { when } from './time.js'

export function notice(message: string, kind: 'ok' | 'error' | 'info' = 'info'): void {
  const element = document.getElementById('notice') as HTMLElement
  element.textContent = message
  element.dataset.kind = kind
  element.hidden = message === ''
}

let flash: [string, 'ok' | 'error' | 'info'] | undefined

/** A notice for the page the address is about to change to (a change of address clears the notice). */
export function noticeNext(message: string, kind: 'ok' | 'error' | 'info' = 'info'): void {
  flash = [message, kind]
}

/** Shows the notice kept by {@link noticeNext}, or clears it. */
export function noticeAfterNavigation(): void {
  notice(flash?.[0] ?? '', flash?.[1])
  flash = undefined
}
