import { get, type Session } from './api.js'
import { bars } from './bars.js'
import { el, when } from './dom.js'
import { type Paused, pausesPanel } from './pauses.js'

interface Overview {
  deadLetters: { parked: number; byCode: Record<string, number>; durable: boolean | null } | null
  health: { ready: boolean; checks: Record<string, unknown>[] } | null
  /** This instance's firing alerts; null from a receiver without them. */
  alerts?: FiringAlert[] | null
  instance: Instance | null
  /** Every instance's answers from the journal; null without one. */
  journal: Fleet | null
  /** What operators paused, and the types one may pause; null from a receiver without pauses. */
  paused?: Paused | null
  /** Panels the server could not gather (store down, too slow), with why: the others still show. */
  failed?: Record<string, string>
}

interface FiringAlert {
  name: string
  severity: 'critical' | 'warning'
  since: string
  message: string
  eventType?: string
}

/** The alerts firing on this instance, first on the page: nothing when none fires. */
function alertsPanel(alerts: FiringAlert[] | null | undefined): HTMLElement[] {
  if (!alerts || alerts.length === 0) return []
  return [
    el(
      'section',
      { class: 'panel', id: 'alerts' },
      el('h3', {}, `Alerts firing on this instance: ${alerts.length}`),
      el(
        'ul',
        {},
        ...alerts.map((alert) =>
          el(
            'li',
            { class: `check ${alert.severity === 'critical' ? 'fail' : 'warn'}` },
            `${alert.name} (${alert.severity}) since ${alert.since}: ${alert.message}`,
          ),
        ),
      ),
    ),
  ]
}

/** The place of a panel that could not be gathered, saying so. */
const unavailable = (id: string, title: string, why: string) =>
  el(
    'section',
    { class: 'panel', id },
    el('h3', {}, title),
    el('p', { class: 'error', id: `${id}-failed` }, `Unavailable: ${why}.`),
  )

interface Instance {
  since: string
  at: string
  outcomes: Record<string, number>
  perMinute: number[]
  latency: { count: number; p50Ms: number | null; p99Ms: number | null }
  inFlight: number
  waiting: number
  hung: { count: number; oldest: { eventId: string; eventType: string; since: string } | null } | null
  overrunning: { count: number; oldest: { eventId: string; eventType: string; since: string } | null } | null
  quarantined: { eventType: string; since: string; overrunning: number; slots: number | null }[] | null
  conflicts: number
  retrying: {
    count: number
    oldest: {
      eventId: string
      eventType: string
      createdAt: string | null
      firstSeen: string
      lastSeen: string
      attempts: number
      lastOutcome: string
      lastStatus: number
    } | null
  }
}

interface Fleet {
  from: string
  last15: Record<string, number>
  last60: Record<string, number>
  perMinute: number[]
}

/**
 * Outcomes of an event handled (now or before) or durably handed to a queue. Every other is a failure to look at,
 * `parked` too: answered 200 so the service stops retrying, but the event is a dead letter waiting for a replay.
 */
const HANDLED = new Set(['processed', 'duplicate', 'queued'])

/** The journal's own accounts (work settled late, replays, answers dropped): listed by outcome, not summed as answers. */
const isAccount = (outcome: string) =>
  outcome.endsWith('_late') || outcome.startsWith('replay_') || outcome.startsWith('journal_')

const sum = (counts: Record<string, number>, keep: (outcome: string) => boolean = () => true) =>
  Object.entries(counts).reduce((total, [outcome, n]) => total + (keep(outcome) && !isAccount(outcome) ? n : 0), 0)

/** The fleet's answers over the last 15 and 60 minutes, by outcome, from the journal every instance writes. */
function fleetPanel(fleet: Fleet): HTMLElement {
  const failing = (outcome: string) => !HANDLED.has(outcome)
  const outcomes = Object.keys(fleet.last60).sort((a, b) => (fleet.last60[b] ?? 0) - (fleet.last60[a] ?? 0))
  return el(
    'section',
    { class: 'panel', id: 'fleet' },
    el('h3', {}, 'Answers, all instances (journal)'),
    el(
      'p',
      { class: 'note' },
      'Every instance sharing the journal together, a board-only process too; counted from the journal, so an answer shows within a second or so.',
    ),
    el(
      'div',
      { class: 'cards', id: 'fleet-cards' },
      card(String(sum(fleet.last15)), 'answered, last 15 min (all instances)'),
      card(String(sum(fleet.last60)), 'answered, last 60 min (all instances)'),
      card(
        String(sum(fleet.last15, failing)),
        'failed, refused or parked, last 15 min (all instances)',
        'fleet-failing-15',
      ),
      card(
        String(sum(fleet.last60, failing)),
        'failed, refused or parked, last 60 min (all instances)',
        'fleet-failing-60',
      ),
    ),
    bars(fleet.perMinute, (index) => `${60 - index} min ago`, 'fleet-per-minute'),
    el('p', { class: 'note' }, 'Answers per minute, all instances, the last hour (oldest left).'),
    outcomes.length === 0
      ? el('p', { class: 'empty' }, 'No answer journaled in the last hour.')
      : el(
          'table',
          { id: 'fleet-outcomes' },
          el(
            'thead',
            {},
            el('tr', {}, el('th', {}, 'Outcome'), el('th', {}, 'Last 15 min'), el('th', {}, 'Last 60 min')),
          ),
          el(
            'tbody',
            {},
            ...outcomes.map((outcome) =>
              el(
                'tr',
                { 'data-outcome': outcome },
                el('td', {}, outcome),
                el('td', {}, String(fleet.last15[outcome] ?? 0)),
                el('td', {}, String(fleet.last60[outcome] ?? 0)),
              ),
            ),
          ),
        ),
  )
}

const card = (value: string, label: string, id?: string) =>
  el('div', { class: 'card', id }, el('div', { class: 'value' }, value), el('div', { class: 'label' }, label))

const ms = (value: number | null) => (value === null ? '—' : value <= 1 ? '≤ 1 ms' : `≤ ${value} ms`)

/**
 * This process's figures: the page says so, with when it started counting. With a journal, the fleet's panel has
 * the answers, and this one keeps what only this process knows (latency, slots, hung runs, conflicts).
 */
function instancePanel(instance: Instance | null, journal: boolean): HTMLElement {
  const panel = el(
    'section',
    { class: 'panel', id: 'instance' },
    el('h3', {}, journal ? 'This instance now' : 'This instance, last hour'),
  )
  if (!instance) {
    panel.append(el('p', { class: 'note' }, 'This receiver has no stats() (a newer @payhooks/core has).'))
    return panel
  }
  const answered = Object.values(instance.outcomes).reduce((sum, n) => sum + n, 0)
  const oldest = instance.retrying.oldest
  const fact = (term: string, value: string) => [el('dt', {}, term), el('dd', {}, value)]
  panel.append(
    el(
      'p',
      { class: 'note' },
      journal
        ? `Counted in this process since ${when(instance.since)}: every other instance counts its own.`
        : `Counted in this process since ${when(instance.since)}: every other instance counts its own. For all of them, give the receivers a journal (docs/guide/journal.md), or use the OpenTelemetry metrics of @payhooks/otel (payhooks.deliveries, payhooks.answer.duration).`,
    ),
    el(
      'div',
      { class: 'cards', id: 'instance-cards' },
      ...(journal ? [] : [card(String(answered), 'deliveries answered (this instance)')]),
      card(ms(instance.latency.p50Ms), 'answer latency p50 (this instance)'),
      card(ms(instance.latency.p99Ms), 'answer latency p99 (this instance)'),
      card(String(instance.inFlight), 'in flight now (this instance)'),
      card(String(instance.waiting), 'waiting for a slot (this instance)'),
      ...(instance.hung ? [card(String(instance.hung.count), hungLabel(instance.hung.oldest))] : []),
      ...(instance.overrunning
        ? [card(String(instance.overrunning.count), overrunningLabel(instance.overrunning.oldest), 'overrunning')]
        : []),
      ...(instance.quarantined
        ? [card(String(instance.quarantined.length), quarantinedLabel(instance.quarantined), 'quarantined')]
        : []),
      card(String(instance.conflicts), 'conflicts (this instance)'),
    ),
    ...(journal ? [] : answeredHere(instance, answered)),
    el('h3', {}, 'Oldest event still retried'),
    oldest
      ? el(
          'dl',
          { class: 'facts', id: 'oldest-retried' },
          ...fact('Event', oldest.eventId),
          ...fact('Type', oldest.eventType),
          ...fact('Created', when(oldest.createdAt)),
          ...fact('First answered non-2XX here', when(oldest.firstSeen)),
          ...fact('Attempts here', String(oldest.attempts)),
          ...fact('Last answer', `${oldest.lastStatus} ${oldest.lastOutcome} at ${when(oldest.lastSeen)}`),
          ...fact('Events retried (this instance)', String(instance.retrying.count)),
        )
      : el(
          'p',
          { class: 'empty', id: 'oldest-retried' },
          'None: every event this instance answered non-2XX was answered 2XX since.',
        ),
  )
  return panel
}

/**
 * A check's name as shown. The receiver's `closing` check, green while it is not closing, read as if it were: it is
 * shown as what it says about the receiver.
 */
function checkLabel(check: Record<string, unknown>): string {
  if (check.name === 'closing') return check.ok ? 'receiver open: accepting deliveries' : 'receiver closing'
  return String(check.name)
}

export async function showOverview(view: HTMLElement, session: Session): Promise<void> {
  const data = await get<Overview>('overview')
  const { deadLetters, health, instance } = data
  const failed = data.failed ?? {}
  const journal = data.journal ?? null
  const hasJournal = journal !== null || failed.journal !== undefined
  const reload = () => void showOverview(view, session)
  view.replaceChildren(
    el('h2', {}, 'Overview'),
    ...alertsPanel(data.alerts),
    ...(data.paused ? pausesPanel(data.paused, session, reload) : []),
    ...(deadLetters
      ? [
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
        ]
      : [
          unavailable(
            'counts',
            'Dead letters',
            `the dead-letter store could not count them (${failed.deadLetters ?? 'no answer'})`,
          ),
        ]),
    ...(hasJournal
      ? [
          journal
            ? fleetPanel(journal)
            : unavailable('fleet', 'Answers, all instances (journal)', `the journal ${failed.journal}`),
        ]
      : []),
    failed.instance ? unavailable('instance', 'This instance', failed.instance) : instancePanel(instance, hasJournal),
    failed.health
      ? unavailable('health', 'Health', `health() ${failed.health}`)
      : el(
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
                    checkLabel(check),
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

/** This process's answers of the last hour: per minute, and by outcome (shown when there is no journal). */
function answeredHere(instance: Instance, answered: number): HTMLElement[] {
  return [
    bars(instance.perMinute, (index) => `${60 - index} min ago`, 'per-minute'),
    el('p', { class: 'note' }, 'Deliveries per minute, the last hour (oldest left).'),
    answered === 0
      ? el('p', { class: 'empty' }, 'No delivery answered in the last hour.')
      : el(
          'table',
          { id: 'outcomes' },
          el('thead', {}, el('tr', {}, el('th', {}, 'Outcome'), el('th', {}, 'Deliveries'))),
          el(
            'tbody',
            {},
            ...Object.entries(instance.outcomes)
              .sort((a, b) => b[1] - a[1])
              .map(([outcome, count]) => el('tr', {}, el('td', {}, outcome), el('td', {}, String(count)))),
          ),
        ),
  ]
}

/** The hung figure's label: the oldest hung run's event and since when, when there is one. */
function hungLabel(oldest: { eventId: string; eventType: string; since: string } | null): string {
  const base = 'handlers hung past maxRunMs (this instance)'
  return oldest ? `${base}; oldest ${oldest.eventType} ${oldest.eventId} since ${when(oldest.since)}` : base
}

/** The overrunning figure's label: the oldest run past deadlineMs, when there is one. */
function overrunningLabel(oldest: { eventId: string; eventType: string; since: string } | null): string {
  const base = 'handlers running past deadlineMs (this instance)'
  return oldest ? `${base}; oldest ${oldest.eventType} ${oldest.eventId} since ${oldest.since}` : base
}

/** The quarantined figure's label: which event types, since when (their deliveries are answered 503). */
function quarantinedLabel(types: { eventType: string; since: string }[]): string {
  const base = 'event types quarantined, answered 503 (this instance)'
  return types.length === 0
    ? base
    : `${base}: ${types.map((type) => `${type.eventType} since ${type.since}`).join(', ')}`
}
