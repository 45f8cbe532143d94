/**
 * The dashboard's browser code. It runs in the page, not in Node: ui.ts serves this function's
 * compiled source (`String(dashboardApp)`) as `/_sandbox/ui/app.js`, so the body must use nothing
 * but browser globals: no imports, no helpers from outside it.
 */
export function dashboardApp(): void {
  interface Attempt {
    kind: 'scheduled' | 'duplicate' | 'resend'
    retry?: number
    time: number
    status?: number
    ok: boolean
    error?: string
    latencyMs: number
    response?: string
    signature?: string
    hint?: string
  }
  interface Delivery {
    subscriptionId: string
    state: 'pending' | 'delivered' | 'failed'
    reason?: string
    firstAttemptTime: number
    nextAttemptTime?: number
    attempts: Attempt[]
  }
  interface Entry {
    eventId: string
    eventType: string
    merchantId: number
    emittedTime: number
    body: string
    deliveries: Delivery[]
  }
  interface Subscription {
    id: string
    url: string
    event_types: string[]
    is_active: boolean
    owner: string
  }
  interface Clock {
    now: number
    manual: boolean
  }
  interface Hello {
    clock: Clock
    chaos: { seed: number } | null
    eventTypes: string[]
    merchantIds: number[]
    subscriptions: Subscription[]
    log: Entry[]
    total: number
  }
  type Child = Node | string | null | undefined | false

  const HOUR = 3_600_000
  /** Dots closer than this share of the timeline stack up; about a label's width on a desktop page. */
  const STACK_PERCENT = 4
  const STACK_NUDGE_PX = 9
  const STACK_RISE_PX = 17
  /** The sandbox keeps this much of each answer (send.ts); a longer body was cut there. */
  const KEPT_ANSWER_CHARS = 500
  /** An answer this short is shown as it is, with nothing to unfold. */
  const SHORT_ANSWER_CHARS = 40
  const TOKEN_KEY = 'payhooks-sandbox-token'
  const entries = new Map<string, Entry>()
  const closed = new Set<string>()
  const openPayloads = new Set<string>()
  let noticeTimer: ReturnType<typeof setTimeout> | undefined
  let subscriptions: Subscription[] = []
  let clock: Clock = { now: Date.now(), manual: false }
  let clockReceived = performance.now()
  let source: EventSource | undefined
  let greeted = false
  let sampleTypes: string[] = []

  // The token comes once as ?token=…; it is kept for this tab and taken out of the address bar.
  const params = new URLSearchParams(location.search)
  const fromUrl = params.get('token')
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl)
    params.delete('token')
    const rest = params.toString()
    history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`)
  }
  let token = sessionStorage.getItem(TOKEN_KEY)

  function h(tag: string, attributes: Record<string, string | boolean | undefined> = {}, ...children: Child[]) {
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

  function byId<T extends HTMLElement>(id: string): T {
    return document.getElementById(id) as T
  }

  const now = () => (clock.manual ? clock.now : clock.now + (performance.now() - clockReceived))
  const pad = (n: number) => String(n).padStart(2, '0')
  function clockTime(time: number, withDate = false): string {
    const d = new Date(time)
    const hms = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
    return withDate ? `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${hms}` : hms
  }
  function duration(ms: number): string {
    const minutes = Math.round(Math.abs(ms) / 60_000)
    if (minutes < 1) return `${Math.round(Math.abs(ms) / 1000)} s`
    if (minutes < 60) return `${minutes} min`
    const hours = Math.floor(minutes / 60)
    return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`
  }

  function notice(text: string, kind: 'info' | 'error' = 'info'): void {
    const element = byId('notice')
    element.textContent = text
    element.dataset.kind = kind
    element.hidden = text === ''
    clearTimeout(noticeTimer)
    if (kind === 'info' && text !== '') noticeTimer = setTimeout(() => notice(''), 5000)
  }

  async function api(path: string, body?: unknown): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = {}
    if (token) headers['x-sandbox-token'] = token
    if (body !== undefined) headers['content-type'] = 'application/json'
    const response = await fetch(path, {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>
    if (response.status === 401) askForToken(token ? 'That token was refused.' : undefined)
    if (!response.ok) {
      const error = answer.error as { message?: string } | undefined
      throw new Error(error?.message ?? `HTTP ${response.status}`)
    }
    return answer
  }

  function askForToken(problem?: string): void {
    source?.close()
    setLive('locked')
    byId('token-problem').textContent = problem ?? ''
    byId('token-form').hidden = false
  }

  function setLive(state: 'connecting' | 'live' | 'offline' | 'locked'): void {
    const element = byId('live')
    element.dataset.state = state
    element.textContent = { connecting: 'connecting…', live: 'live', offline: 'reconnecting…', locked: 'token needed' }[
      state
    ]
  }

  function connect(): void {
    source?.close()
    setLive('connecting')
    const stream = new EventSource(`/_sandbox/events${token ? `?token=${encodeURIComponent(token)}` : ''}`)
    source = stream
    stream.addEventListener('open', () => setLive('live'))
    stream.addEventListener('error', () => {
      if (stream !== source) return
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
    const on = <T>(name: string, handle: (data: T) => void) =>
      stream.addEventListener(name, (event) => handle(JSON.parse((event as MessageEvent<string>).data) as T))
    on<Hello>('hello', (hello) => {
      byId('token-form').hidden = true
      entries.clear()
      for (const entry of hello.log) entries.set(entry.eventId, entry)
      // Older events start folded: the newest three are what one came to see.
      if (!greeted) for (const entry of hello.log.slice(0, -3)) closed.add(entry.eventId)
      greeted = true
      subscriptions = hello.subscriptions
      setClock(hello.clock)
      fillEmitForm(hello)
      sampleTypes = hello.eventTypes
      fillTypeFilter()
      byId('chaos').textContent = hello.chaos ? `chaos on (seed ${hello.chaos.seed})` : 'chaos off'
      byId('total').textContent = hello.total > hello.log.length ? `latest ${hello.log.length} of ${hello.total}` : ''
      renderSubscriptions()
      renderEvents()
    })
    on<Entry>('entry', (entry) => upsert(entry))
    on<{ eventId: string }>('removed', ({ eventId }) => {
      entries.delete(eventId)
      document.querySelector(`li.event[data-event-id="${CSS.escape(eventId)}"]`)?.remove()
      renderCount()
    })
    on<Subscription[]>('subscriptions', (list) => {
      subscriptions = list
      renderSubscriptions()
      renderEvents()
    })
    on<Clock>('clock', (next) => {
      setClock(next)
      renderEvents()
    })
  }

  function setClock(next: Clock): void {
    clock = next
    clockReceived = performance.now()
    byId('clock-kind').textContent = clock.manual ? 'manual clock' : 'real clock'
    byId('advance').hidden = !clock.manual
    renderClock()
  }

  function renderClock(): void {
    byId('clock-now').textContent = `${clockTime(now(), true)} UTC`
  }

  /** The type filter's choices: the types the sandbox has samples of, and any other type in the log. */
  function fillTypeFilter(): void {
    const types = byId<HTMLSelectElement>('filter-type')
    const listed = new Set([...sampleTypes, ...Array.from(entries.values(), (entry) => entry.eventType)])
    if (types.options.length === listed.size + 1) return
    const keep = types.value
    types.replaceChildren(
      h('option', { value: '' }, 'all event types'),
      ...[...listed].sort().map((type) => h('option', { value: type }, type)),
    )
    types.value = keep
  }

  /** Whether `entry` passes the filters above the list: its type, a state or an answer, and part of its id. */
  function shown(entry: Entry): boolean {
    const type = byId<HTMLSelectElement>('filter-type').value
    const status = byId<HTMLSelectElement>('filter-status').value
    const id = byId<HTMLInputElement>('filter-id').value.trim().toLowerCase()
    if (type && entry.eventType !== type) return false
    if (id && !entry.eventId.toLowerCase().includes(id)) return false
    if (!status) return true
    if (['pending', 'delivered', 'failed', 'none'].includes(status)) return entryState(entry) === status
    const attempts = entry.deliveries.flatMap((d) => d.attempts)
    if (status === 'error') return attempts.some((a) => a.status === undefined)
    return attempts.some((a) => a.status !== undefined && String(a.status).startsWith(status))
  }

  function fillEmitForm(hello: Hello): void {
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

  function renderSubscriptions(): void {
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

  function entryState(entry: Entry): string {
    if (entry.deliveries.length === 0) return 'none'
    if (entry.deliveries.some((d) => d.state === 'pending')) return 'pending'
    return entry.deliveries.every((d) => d.state === 'delivered') ? 'delivered' : 'failed'
  }

  const badge = (state: string, text = state) => h('span', { class: `badge state-${state}` }, text)
  const attemptName = (a: Attempt) => (a.kind !== 'scheduled' ? a.kind : a.retry ? `retry ${a.retry}` : 'first send')
  const statusText = (a: Attempt) => (a.status === undefined ? 'no answer' : String(a.status))

  function timeline(delivery: Delivery): HTMLElement {
    const start = delivery.firstAttemptTime
    const latest = Math.max(
      ...delivery.attempts.map((a) => a.time - start),
      delivery.nextAttemptTime === undefined ? 0 : delivery.nextAttemptTime - start,
      0,
    )
    const hours = Math.min(72, Math.max(3, Math.ceil(latest / HOUR) + 1))
    const step = hours <= 8 ? 1 : hours <= 24 ? 3 : 12
    const at = (offset: number) => `${Math.min(100, Math.max(0, (offset / (hours * HOUR)) * 100))}%`
    const track = h('div', { class: 'track' })
    for (let hour = 0; hour <= hours; hour += step) {
      const tick = h('span', { class: 'tick' }, `${hour} h`)
      tick.style.left = at(hour * HOUR)
      track.append(tick)
    }
    // Attempts closer than a label's width (several at 0 h: a first send, a chaos copy, a resend) are a stack:
    // each one's dot is nudged right and its label raised, so none hides another.
    let stackStart = Number.NEGATIVE_INFINITY
    let stacked = 0
    let tallest = 1
    delivery.attempts.forEach((attempt, index) => {
      const offset = attempt.time - start
      const percent = (offset / (hours * HOUR)) * 100
      if (percent - stackStart < STACK_PERCENT) stacked += 1
      else {
        stackStart = percent
        stacked = 0
      }
      tallest = Math.max(tallest, stacked + 1)
      const dot = h(
        'span',
        {
          class: `dot ${attempt.ok ? 'ok' : 'fail'} kind-${attempt.kind}`,
          'data-status': statusText(attempt),
          'data-index': String(index + 1),
          'data-stack': String(stacked),
          title: `${attemptName(attempt)} at ${clockTime(attempt.time, true)}: ${attempt.error ?? statusText(attempt)}, ${attempt.latencyMs} ms${attempt.hint ? `\n${attempt.hint}` : ''}`,
        },
        h('span', { class: 'dot-label' }, attempt.status === undefined ? 'err' : String(attempt.status)),
      )
      dot.style.left = `calc(${at(offset)} + ${stacked * STACK_NUDGE_PX}px)`
      ;(dot.firstChild as HTMLElement).style.bottom = `${16 + stacked * STACK_RISE_PX}px`
      track.append(dot)
    })
    if (delivery.nextAttemptTime !== undefined) {
      const next = h('span', { class: 'dot next', title: `next attempt at ${clockTime(delivery.nextAttemptTime)}` })
      next.style.left = at(delivery.nextAttemptTime - start)
      track.append(next)
    }
    const line = h('div', { class: 'timeline', 'aria-label': 'attempts over time' }, track)
    line.style.paddingTop = `${30 + (tallest - 1) * STACK_RISE_PX}px`
    return line
  }

  /** The answer's body folded to its first line, unfolding to all of it that the sandbox kept. */
  function answerCell(a: Attempt): HTMLElement {
    if (a.status === undefined) return h('td', { class: 'answer error' }, a.error ?? 'no answer')
    if (!a.response) return h('td', { class: 'answer' }, '—')
    if (a.response.length <= SHORT_ANSWER_CHARS && !a.response.includes('\n')) {
      return h('td', { class: 'answer' }, h('code', {}, a.response))
    }
    const cut = a.response.length >= KEPT_ANSWER_CHARS
    return h(
      'td',
      { class: 'answer' },
      h(
        'details',
        { class: 'body' },
        h('summary', {}, h('code', {}, a.response)),
        h('pre', {}, a.response),
        cut && h('p', { class: 'cut' }, `The sandbox keeps the first ${KEPT_ANSWER_CHARS} characters of an answer.`),
      ),
    )
  }

  function attemptsTable(delivery: Delivery): HTMLElement {
    const rows: HTMLElement[] = []
    delivery.attempts.forEach((a, index) => {
      rows.push(
        h(
          'tr',
          { class: a.ok ? 'ok' : 'fail' },
          h('td', {}, String(index + 1)),
          h('td', { class: 'name' }, attemptName(a)),
          h('td', { class: 'time' }, `${clockTime(a.time, true)} (+${duration(a.time - delivery.firstAttemptTime)})`),
          h('td', { class: 'status' }, a.status === undefined ? 'no answer' : String(a.status)),
          h('td', { class: 'latency' }, `${a.latencyMs} ms`),
          answerCell(a),
        ),
      )
      // What a puzzling answer means, once per run of attempts that got it.
      if (a.hint && a.hint !== delivery.attempts[index - 1]?.hint) {
        rows.push(h('tr', { class: 'hint' }, h('td', {}, ''), h('td', { colspan: '5' }, a.hint)))
      }
    })
    return h(
      'table',
      { class: 'attempts' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['#', 'attempt', 'clock time (UTC)', 'status', 'latency', 'answer body'].map((name) => h('th', {}, name)),
        ),
      ),
      h('tbody', {}, ...rows),
    )
  }

  function deliveryView(delivery: Delivery): HTMLElement {
    const subscription = subscriptions.find((s) => s.id === delivery.subscriptionId)
    const last = delivery.attempts[delivery.attempts.length - 1]
    const next = delivery.nextAttemptTime
    return h(
      'div',
      { class: 'delivery', 'data-subscription-id': delivery.subscriptionId, 'data-state': delivery.state },
      h(
        'div',
        { class: 'delivery-head' },
        badge(delivery.state),
        h('code', { class: 'url' }, subscription ? subscription.url : `${delivery.subscriptionId} (deleted)`),
        next !== undefined &&
          h(
            'span',
            { class: 'next-attempt' },
            `next attempt ${clockTime(next, true)} (${next > now() ? `in ${duration(next - now())}` : 'due'})`,
          ),
        delivery.reason && h('span', { class: 'reason' }, delivery.reason),
      ),
      timeline(delivery),
      delivery.attempts.length > 0 ? attemptsTable(delivery) : h('p', { class: 'empty' }, 'No attempt yet.'),
      last?.signature &&
        h('p', { class: 'signature' }, 'service-hmac-sha256: ', h('code', { class: 'sig' }, last.signature)),
    )
  }

  function payload(entry: Entry): HTMLElement {
    const details = h(
      'details',
      { class: 'payload', open: openPayloads.has(entry.eventId) },
      h('summary', {}, `Signed payload (${entry.body.length} bytes)`),
      h('pre', {}, entry.body),
    ) as HTMLDetailsElement
    details.addEventListener('toggle', () => {
      if (details.open) openPayloads.add(entry.eventId)
      else openPayloads.delete(entry.eventId)
    })
    return details
  }

  function card(entry: Entry): HTMLElement {
    const state = entryState(entry)
    const resend = h('button', { type: 'button', class: 'resend', disabled: entry.deliveries.length === 0 }, 'Resend')
    resend.addEventListener('click', (event) => {
      event.preventDefault()
      api('/_sandbox/resend', { ids: [entry.eventId] }).then(
        (answer) => notice(`Resent ${entry.eventId}: ${(answer.data as { sends: number }).sends} send(s).`),
        (error: Error) => notice(error.message, 'error'),
      )
    })
    const details = h(
      'details',
      { open: !closed.has(entry.eventId) },
      h(
        'summary',
        {},
        badge(state, state === 'none' ? 'sent nowhere' : state),
        h('strong', { class: 'type' }, entry.eventType),
        h('code', { class: 'id' }, entry.eventId),
        h(
          'span',
          { class: 'meta' },
          `merchant ${entry.merchantId} · ${clockTime(entry.emittedTime, true)} UTC · ${entry.deliveries.length} deliver${entry.deliveries.length === 1 ? 'y' : 'ies'}`,
        ),
        resend,
      ),
      h(
        'div',
        { class: 'event-body' },
        entry.deliveries.length === 0 &&
          h('p', { class: 'warning' }, 'No active subscription got this event, so nothing was sent.'),
        ...entry.deliveries.map(deliveryView),
        payload(entry),
      ),
    )
    details.addEventListener('toggle', () => {
      if ((details as HTMLDetailsElement).open) closed.delete(entry.eventId)
      else closed.add(entry.eventId)
    })
    return h('li', { class: 'event', 'data-event-id': entry.eventId, 'data-state': state }, details)
  }

  function renderCount(): void {
    const showing = byId('events').childElementCount
    byId('event-count').textContent = showing === entries.size ? String(entries.size) : `${showing} of ${entries.size}`
    byId('no-events').hidden = entries.size > 0
    byId('no-match').hidden = entries.size === 0 || showing > 0
  }

  function renderEvents(): void {
    // Newest first; events emitted at the same clock time (a manual clock) in the reverse of their log order.
    const sorted = [...entries.values()]
      .reverse()
      .filter(shown)
      .sort((a, b) => b.emittedTime - a.emittedTime)
    byId('events').replaceChildren(...sorted.map(card))
    renderCount()
  }

  function upsert(entry: Entry): void {
    const known = entries.has(entry.eventId)
    entries.set(entry.eventId, entry)
    if (!known) fillTypeFilter()
    const list = byId('events')
    const old = list.querySelector(`li.event[data-event-id="${CSS.escape(entry.eventId)}"]`)
    if (!shown(entry)) old?.remove()
    else if (old) old.replaceWith(card(entry))
    else if (!known) list.prepend(card(entry))
    else renderEvents() // it matches the filters now: put it back in its place
    renderCount()
  }

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
          const entry = answer.data as Entry
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
    token = value
    sessionStorage.setItem(TOKEN_KEY, value)
    byId('token-form').hidden = true
    connect()
  })

  setInterval(() => {
    if (!clock.manual) renderClock()
  }, 1000)
  connect()
}
