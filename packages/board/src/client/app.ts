import { ApiError, get, type Session } from './api.js'
import { notice, noticeAfterNavigation } from './dom.js'
import { showEvent, showEvents } from './events.js'
import { showKeys } from './keys.js'
import { showLetter } from './letter.js'
import { showLetters } from './letters.js'
import { showOverview } from './overview.js'
import { showSecrets } from './secrets.js'
import { setZone, zone, zoneName } from './time.js'

const view = document.getElementById('view') as HTMLElement
let session: Session
/** The route begun last: a view still loading when another began is never shown over it. */
let latest = 0

async function route(): Promise<void> {
  const mine = ++latest
  // Each route renders into a node of its own, shown once ready: a list still loading after a delete (hash '#/') no
  // longer replaces the letter opened meanwhile.
  const target = document.createElement('div')
  target.style.display = 'contents'
  const hash = location.hash.slice(1) || '/'
  const name = hash.match(/^\/(overview|secrets|keys|events?)\b/)?.[1]?.replace(/^event$/, 'events') ?? 'letters'
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    const current = link.dataset.view === name
    if (current) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  try {
    if (hash.startsWith('/letter/')) await showLetter(target, session, decodeURIComponent(hash.slice(8)))
    else if (hash.startsWith('/event/')) await showEvent(target, session, decodeURIComponent(hash.slice(7)))
    else if (name === 'events') await showEvents(target, new URLSearchParams(hash.split('?')[1] ?? ''))
    else if (name === 'overview') await showOverview(target, session)
    else if (name === 'secrets') await showSecrets(target)
    else if (name === 'keys') await showKeys(target)
    else await showLetters(target, session, new URLSearchParams(hash.split('?')[1] ?? ''))
  } catch (error) {
    if (mine !== latest) return
    notice(error instanceof ApiError ? `The board answered ${error.status}: ${error.message}` : String(error), 'error')
  }
  if (mine === latest) view.replaceChildren(target)
}

async function start(): Promise<void> {
  try {
    session = await get<Session>('session')
  } catch (error) {
    notice(error instanceof ApiError ? `The board answered ${error.status}: ${error.message}` : String(error), 'error')
    return
  }
  ;(document.getElementById('mode') as HTMLElement).hidden = !session.readOnly
  const zoneButton = document.getElementById('zone') as HTMLButtonElement
  const label = () => {
    zoneButton.textContent = `Times: ${zoneName()}`
    zoneButton.dataset.zone = zone()
  }
  label()
  zoneButton.addEventListener('click', () => {
    setZone(zone() === 'utc' ? 'local' : 'utc')
    label()
    void route()
  })
  window.addEventListener('hashchange', () => {
    noticeAfterNavigation()
    void route()
  })
  await route()
}

void start()
