import { RETRY_HOURS, RETRY_INTERVAL_MS } from '@payhooks/core'
import { answerHint } from './answer-hints.js'
import type { Clock, ClockTimer } from './clock.js'
import { postSigned, serializeEvent } from './send.js'
import type { ResolvedChaos, SandboxAttempt, SandboxDelivery, SandboxLogEntry, SandboxSubscription } from './types.js'

/** Small deterministic PRNG (mulberry32): the same seed gives the same chaos. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

interface ChaosPlan {
  /** Delay of the first send after the emit. */
  delayMs: number
  /** No duplicate, a copy sent together with the first send, or a copy this many ms after it. */
  duplicate: 'none' | 'concurrent' | number
}

interface OutgoingDelivery {
  view: SandboxDelivery
  entry: SandboxLogEntry
  /** Index of the next scheduled attempt: 0 for the first send, then 1 to 72. */
  nextRetry: number
  timer?: ClockTimer
}

export interface DeliveryEngineOptions {
  clock: Clock
  timeoutMs: number
  chaos: ResolvedChaos | undefined
  logLimit: number
  subscription(id: string): SandboxSubscription | undefined
  logger: ((line: string) => void) | undefined
  /** Runs after an event is logged, gets an attempt or changes state, or is dropped from the log. */
  onChange?(eventId: string): void
}

/**
 * Sends messages and keeps the log. Schedule: the first send at t0 (the emit, plus a chaos delay
 * if any), then retry n at exactly t0 + n hours for n = 1..72, stopping at the first 2XX. A 2XX
 * answer to any copy (duplicate or resend included) marks the delivery delivered.
 */
export class DeliveryEngine {
  private readonly entries = new Map<string, SandboxLogEntry>()
  private readonly deliveries = new Map<string, OutgoingDelivery[]>()
  private readonly inflight = new Set<Promise<unknown>>()
  /** Chaos-delayed sends not yet done: `idle()` waits for them on a real clock. */
  private readonly soon = new Set<ClockTimer>()
  private waiters: (() => void)[] = []
  private readonly stop = new AbortController()
  private readonly random: (() => number) | undefined
  private closed = false

  constructor(private readonly options: DeliveryEngineOptions) {
    this.random = options.chaos ? seededRandom(options.chaos.seed) : undefined
  }

  /** Logs `event` and starts its deliveries; resolves once the sends due now completed. */
  async dispatch(
    event: Record<string, unknown>,
    subscriptions: readonly SandboxSubscription[],
    merchantId: number,
  ): Promise<SandboxLogEntry> {
    if (this.closed) throw new Error('sandbox is closed')
    const { clock } = this.options
    const eventId = String(event.event_id)
    const eventType = String(event.event_type)
    const now = clock.now()
    const entry: SandboxLogEntry = {
      eventId,
      eventType,
      merchantId,
      emittedTime: now,
      emittedAt: new Date(now).toISOString(),
      event,
      body: serializeEvent(event),
      deliveries: [],
    }
    this.entries.set(eventId, entry)
    this.changed(eventId)
    const list: OutgoingDelivery[] = []
    this.deliveries.set(eventId, list)
    const immediate: Promise<void>[] = []
    for (const subscription of subscriptions) {
      const plan = this.plan()
      const view: SandboxDelivery = {
        eventId,
        eventType,
        subscriptionId: subscription.id,
        state: 'pending',
        firstAttemptTime: now + plan.delayMs,
        attempts: [],
      }
      const delivery: OutgoingDelivery = { view, entry, nextRetry: 0 }
      entry.deliveries.push(view)
      list.push(delivery)
      const withCopy = plan.duplicate === 'concurrent'
      if (plan.delayMs === 0) immediate.push(this.fire(delivery, withCopy))
      else {
        view.nextAttemptTime = view.firstAttemptTime
        delivery.timer = this.soonTimer(() => this.fire(delivery, withCopy), plan.delayMs)
      }
      if (typeof plan.duplicate === 'number') {
        this.soonTimer(() => this.send(delivery, 'duplicate'), plan.delayMs + plan.duplicate)
      }
    }
    this.prune()
    await Promise.all(immediate)
    return structuredClone(entry)
  }

  /** Sends the event once more to each of its deliveries that `accept` keeps; resolves when done. */
  async resend(eventId: string, accept: (subscription: SandboxSubscription) => boolean): Promise<number> {
    if (this.closed) throw new Error('sandbox is closed')
    const targets = (this.deliveries.get(eventId) ?? []).filter((d) => {
      const subscription = this.options.subscription(d.view.subscriptionId)
      return subscription !== undefined && accept(subscription)
    })
    await Promise.all(targets.map((d) => this.send(d, 'resend')))
    return targets.length
  }

  /** Whether any delivery of `eventId` went to a subscription `accept` keeps. */
  hasDeliveries(eventId: string, accept: (subscription: SandboxSubscription) => boolean): boolean {
    return (this.deliveries.get(eventId) ?? []).some((d) => {
      const subscription = this.options.subscription(d.view.subscriptionId)
      return subscription !== undefined && accept(subscription)
    })
  }

  /** Ends the pending deliveries of a deleted subscription. */
  subscriptionDeleted(subscriptionId: string): void {
    for (const list of this.deliveries.values()) {
      for (const delivery of list) {
        if (delivery.view.subscriptionId !== subscriptionId || delivery.view.state !== 'pending') continue
        delivery.timer?.cancel()
        delivery.timer = undefined
        delivery.view.nextAttemptTime = undefined
        delivery.view.state = 'failed'
        delivery.view.reason = 'subscription deleted'
        this.changed(delivery.view.eventId)
      }
    }
  }

  log(): SandboxLogEntry[] {
    return structuredClone([...this.entries.values()])
  }

  entry(eventId: string): SandboxLogEntry | undefined {
    const entry = this.entries.get(eventId)
    return entry && structuredClone(entry)
  }

  has(eventId: string): boolean {
    return this.entries.has(eventId)
  }

  /** The latest `limit` logged events, oldest first, and how many the log holds. */
  recent(limit: number): { entries: SandboxLogEntry[]; total: number } {
    const all = [...this.entries.values()]
    return { entries: structuredClone(all.slice(Math.max(0, all.length - limit))), total: all.length }
  }

  private changed(eventId: string): void {
    this.options.onChange?.(eventId)
  }

  /** Resolves once no send is running and, when `waitForChaos`, no chaos-delayed send is waiting. */
  async idle(waitForChaos: boolean): Promise<void> {
    // Bounded: each round waits for a send or a chaos timer to finish; new work only comes from emits.
    while (this.inflight.size > 0 || (waitForChaos && this.soon.size > 0)) {
      const waits: Promise<unknown>[] = []
      if (this.inflight.size > 0) waits.push(Promise.allSettled([...this.inflight]))
      if (waitForChaos && this.soon.size > 0) waits.push(new Promise<void>((resolve) => this.waiters.push(resolve)))
      await Promise.race(waits)
    }
  }

  async close(): Promise<void> {
    this.closed = true
    for (const list of this.deliveries.values()) {
      for (const delivery of list) {
        delivery.timer?.cancel()
        delivery.timer = undefined
      }
    }
    for (const timer of [...this.soon]) timer.cancel()
    this.stop.abort()
    await Promise.allSettled([...this.inflight])
    this.wake()
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve()
  }

  /** A clock timer for a chaos-delayed send, tracked so `idle()` can wait for it. */
  private soonTimer(callback: () => Promise<void>, delayMs: number): ClockTimer {
    const timer: ClockTimer = {
      cancel: () => {
        inner.cancel()
        if (this.soon.delete(timer)) this.wake()
      },
    }
    const inner = this.options.clock.setTimeout(async () => {
      try {
        await callback()
      } finally {
        this.soon.delete(timer)
        this.wake()
      }
    }, delayMs)
    this.soon.add(timer)
    return timer
  }

  private plan(): ChaosPlan {
    const chaos = this.options.chaos
    const random = this.random
    if (!chaos || !random) return { delayMs: 0, duplicate: 'none' }
    // Always draw the same number of values, so one delivery's plan never shifts the next one's.
    const [reorder, delay, duplicate, concurrent, duplicateDelay] = [random(), random(), random(), random(), random()]
    const delayMs = reorder < chaos.reorderRate ? 1 + Math.floor(delay * chaos.maxDelayMs) : 0
    if (duplicate >= chaos.duplicateRate) return { delayMs, duplicate: 'none' }
    return { delayMs, duplicate: concurrent < 0.5 ? 'concurrent' : 1 + Math.floor(duplicateDelay * chaos.maxDelayMs) }
  }

  /** Scheduled attempt `delivery.nextRetry`, then the next retry if it failed. */
  private async fire(delivery: OutgoingDelivery, withCopy: boolean): Promise<void> {
    const { view } = delivery
    delivery.timer = undefined
    view.nextAttemptTime = undefined
    if (view.state !== 'pending' || this.closed) return
    const retry = delivery.nextRetry++
    const sends = [this.send(delivery, 'scheduled', retry)]
    if (withCopy) sends.push(this.send(delivery, 'duplicate'))
    await Promise.all(sends)
    if (view.state !== 'pending' || this.closed) return
    if (delivery.nextRetry > RETRY_HOURS) {
      view.state = 'failed'
      view.reason = `no 2XX answer within ${RETRY_HOURS} hours`
      this.options.logger?.(`✗ ${view.eventType} ${view.eventId} → ${view.subscriptionId}: failed, retries exhausted`)
      this.changed(view.eventId)
      return
    }
    const due = view.firstAttemptTime + delivery.nextRetry * RETRY_INTERVAL_MS
    view.nextAttemptTime = due
    delivery.timer = this.options.clock.setTimeout(
      () => this.fire(delivery, false),
      Math.max(0, due - this.options.clock.now()),
    )
    this.changed(view.eventId)
  }

  private send(delivery: OutgoingDelivery, kind: SandboxAttempt['kind'], retry?: number): Promise<void> {
    const subscription = this.options.subscription(delivery.view.subscriptionId)
    // An inactive subscription gets nothing; its schedule keeps running in case it is reactivated.
    if (!subscription?.is_active || this.closed) return Promise.resolve()
    const work = this.post(delivery, subscription, kind, retry)
    this.inflight.add(work)
    return work.finally(() => this.inflight.delete(work))
  }

  private async post(
    delivery: OutgoingDelivery,
    subscription: SandboxSubscription,
    kind: SandboxAttempt['kind'],
    retry: number | undefined,
  ): Promise<void> {
    const time = this.options.clock.now()
    const result = await postSigned(
      subscription.url,
      subscription.signature_secret,
      delivery.entry.body,
      this.options.timeoutMs,
      this.stop.signal,
    )
    const attempt: SandboxAttempt = {
      kind,
      ...(retry === undefined ? {} : { retry }),
      time,
      at: new Date(time).toISOString(),
      ...(result.status === undefined ? {} : { status: result.status }),
      ok: result.ok,
      ...(result.error === undefined ? {} : { error: result.error }),
      latencyMs: result.latencyMs,
      ...(result.response === undefined ? {} : { response: result.response }),
      signature: result.signature,
    }
    const hint = answerHint(result.status, result.response)
    if (hint) attempt.hint = hint
    const { view } = delivery
    view.attempts.push(attempt)
    if (result.ok && view.state !== 'delivered') {
      view.state = 'delivered'
      view.reason = undefined
      delivery.timer?.cancel()
      delivery.timer = undefined
      view.nextAttemptTime = undefined
    }
    this.changed(view.eventId)
    this.options.logger?.(
      `${result.ok ? '✓' : '·'} ${view.eventType} ${view.eventId} → ${subscription.url} (${kind}${retry ? ` ${retry}` : ''}): ${
        result.status ?? result.error
      } in ${result.latencyMs} ms`,
    )
  }

  /** Drops the oldest finished entries beyond `logLimit`. */
  private prune(): void {
    if (this.entries.size <= this.options.logLimit) return
    for (const [eventId, entry] of this.entries) {
      if (this.entries.size <= this.options.logLimit) break
      if (entry.deliveries.some((d) => d.state === 'pending')) continue
      this.entries.delete(eventId)
      this.deliveries.delete(eventId)
      this.changed(eventId)
    }
  }
}
