import { type EventHandler, warn } from '../event-handler/index.js'
import { RETRY_WINDOW_MS } from '../service-contract.js'
import { isThenable } from '../util/thenable.js'
import { check } from '../validations.js'
import type { Pause, PauseStore } from './types.js'

/** A pause without durable dead letters is warned about once this close to the service's 72 hours of retries. */
export const PAUSE_WARN_LEFT_MS = 24 * 3_600_000
const DEFAULT_REFRESH_MS = 1000

/**
 * A receiver's copy of the pauses in force, read from its {@link PauseStore} when it starts and then in the
 * background (every `refreshMs`, or on each change of a store that `watch`es). The hot path reads `active` and, only
 * while it is true, {@link PauseWatch.pauseOf}: never the store. A read that fails keeps the last copy and is logged
 * once (and once when reads work again); nothing of it reaches a delivery.
 */
export class PauseWatch {
  /** True while a pause is in force, or until the first read ended: a delivery must then look closer. */
  active = true
  /** Whether the first read ended (read, or failed: then as if nothing were paused). */
  loaded = false
  readonly refreshMs: number
  private byType = new Map<string, Pause>()
  private reading: Promise<void> | undefined
  private initialized: boolean
  private failing = false
  private timer: ReturnType<typeof setInterval> | undefined
  private warnTimer: ReturnType<typeof setTimeout> | undefined
  private unwatch: (() => void) | undefined
  private readonly warned = new Set<string>()
  private stopped = false

  constructor(
    readonly store: PauseStore,
    private readonly eventHandler: EventHandler,
    /** Whether paused deliveries are parked durably (no retry window to run out). */
    private readonly parksDurably: boolean,
  ) {
    const refreshMs = store.refreshMs ?? DEFAULT_REFRESH_MS
    check(
      typeof refreshMs === 'number' && refreshMs >= 10 && refreshMs <= 60_000,
      'createWebhooks',
      'pauses.refreshMs',
      'be a number of milliseconds from 10 to 60000',
      RangeError,
    )
    this.refreshMs = refreshMs
    this.initialized = !store.init
    if (store.watch) {
      this.unwatch = store.watch(() => void this.refresh())
    } else {
      this.timer = setInterval(() => void this.refresh(), refreshMs)
      this.timer.unref?.()
    }
    void this.refresh()
  }

  /** How long after a change every instance has seen it: twice `refreshMs`, or nothing for a watched store. */
  get propagationMs(): number {
    return this.store.watch ? 0 : 2 * this.refreshMs
  }

  /** The pause that holds `eventType` (its own, else the pause of every type), or undefined. */
  pauseOf(eventType: string): Pause | undefined {
    return this.byType.get(eventType) ?? this.byType.get('*')
  }

  /** The pauses in this copy, oldest first. */
  list(): Pause[] {
    return [...this.byType.values()]
      .sort((a, b) => a.since.getTime() - b.since.getTime())
      .map((pause) => ({ ...pause, since: new Date(pause.since) }))
  }

  /** Resolves once the first read ended; never rejects. */
  ready(): Promise<void> {
    return this.loaded ? Promise.resolve() : (this.reading ?? this.refresh())
  }

  /** The store once its `init` ran. */
  async readyStore(): Promise<PauseStore> {
    if (!this.initialized) {
      await this.store.init?.()
      this.initialized = true
    }
    return this.store
  }

  /** Reads the store again (joining a read under way); never rejects. */
  refresh(): Promise<void> {
    if (this.reading) return this.reading
    let listed: Pause[] | Promise<Pause[]>
    try {
      if (this.initialized) listed = this.store.list()
      else listed = this.readyStore().then((store) => store.list())
    } catch (error) {
      this.failed(error)
      return Promise.resolve()
    }
    // A synchronous store (memory) is applied at once: no delivery ever waits for it.
    if (!isThenable(listed)) {
      this.apply(listed)
      return Promise.resolve()
    }
    const reading = listed.then(
      (pauses) => this.apply(pauses),
      (error: unknown) => this.failed(error),
    )
    this.reading = reading.finally(() => {
      this.reading = undefined
    })
    return this.reading
  }

  /** Stops reading: `close()`. */
  stop(): void {
    this.stopped = true
    clearInterval(this.timer)
    clearTimeout(this.warnTimer)
    this.unwatch?.()
  }

  private apply(pauses: Pause[]): void {
    const byType = new Map<string, Pause>()
    for (const pause of pauses) byType.set(pause.eventType, pause)
    this.byType = byType
    this.loaded = true
    this.active = byType.size > 0
    if (this.failing) {
      this.failing = false
      warn(this.eventHandler, { code: 'pause_store_recovered' }, 'the pause store answers again: pauses are read')
    }
    this.checkWindow()
  }

  private failed(error: unknown): void {
    if (!this.loaded) {
      this.loaded = true
      this.active = this.byType.size > 0
    }
    if (this.failing || this.stopped) return
    this.failing = true
    const code = (error as { code?: unknown } | null)?.code
    warn(
      this.eventHandler,
      { code: 'pause_store_unavailable' },
      `the pause store could not be read${typeof code === 'string' && /^[A-Za-z0-9_]{1,40}$/.test(code) ? ` (${code})` : ''}: deliveries go on with the pauses last read (none before a first read), and reads are tried again every ${this.refreshMs} ms`,
    )
  }

  /**
   * Without durable dead letters a paused type's deliveries are refused, and the service gives up on an event 72
   * hours after it was created: each pause is warned about once, 24 hours before that window ends for the events
   * of its first hour.
   */
  private checkWindow(): void {
    if (this.parksDurably || this.stopped) return
    const now = Date.now()
    let next = Number.POSITIVE_INFINITY
    for (const pause of this.byType.values()) {
      const key = `${pause.eventType}@${pause.since.getTime()}`
      if (this.warned.has(key)) continue
      const due = pause.since.getTime() + RETRY_WINDOW_MS - PAUSE_WARN_LEFT_MS
      if (due > now) {
        next = Math.min(next, due)
        continue
      }
      this.warned.add(key)
      const hours = Math.floor((now - pause.since.getTime()) / 3_600_000)
      warn(
        this.eventHandler,
        { code: 'pause_nears_retry_window', event_type: pause.eventType },
        `event type ${pause.eventType} paused for ${hours} hours without a durable deadLetters store: its deliveries are answered 503 paused, and the service stops retrying an event 72 hours after it was created; resume it (webhooks.resume, payhooks resume) before events are lost to the window`,
      )
    }
    // A watched store is read on changes only: the warning is due by a timer of its own.
    clearTimeout(this.warnTimer)
    if (this.store.watch && next !== Number.POSITIVE_INFINITY) {
      this.warnTimer = setTimeout(() => this.checkWindow(), Math.min(next - now, 2_147_483_647))
      this.warnTimer.unref?.()
    }
  }
}
