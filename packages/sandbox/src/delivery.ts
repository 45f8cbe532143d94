import { type ChaosPlan, chaosPlanner } from './chaos.js'
import { type OutgoingDelivery, Sender, type SenderOptions } from './outgoing.js'
import { PendingSends } from './pending-sends.js'
import { serializeEvent } from './send.js'
import type { ResolvedChaos, SandboxDelivery, SandboxLogEntry, SandboxSubscription } from './types.js'

export interface DeliveryEngineOptions extends SenderOptions {
  chaos: ResolvedChaos | undefined
  logLimit: number
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
  private readonly pending: PendingSends
  private readonly stop = new AbortController()
  private readonly plan: () => ChaosPlan
  private readonly sender: Sender
  private closed = false

  constructor(private readonly options: DeliveryEngineOptions) {
    this.pending = new PendingSends(options.clock)
    this.plan = chaosPlanner(options.chaos)
    this.sender = new Sender(options, {
      pending: this.pending,
      signal: this.stop.signal,
      closed: () => this.closed,
      changed: (eventId) => this.changed(eventId),
    })
  }

  /** Logs `event` and starts its deliveries; resolves once the sends due now completed. */
  async dispatch(
    event: Record<string, unknown>,
    subscriptions: readonly SandboxSubscription[],
    merchantId: number,
    createdAt?: string,
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
      ...(createdAt === undefined ? {} : { createdAt }),
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
      if (plan.delayMs === 0) immediate.push(this.sender.fire(delivery, withCopy))
      else {
        view.nextAttemptTime = view.firstAttemptTime
        delivery.timer = this.pending.soonTimer(() => this.sender.fire(delivery, withCopy), plan.delayMs)
      }
      if (typeof plan.duplicate === 'number') {
        this.pending.soonTimer(() => this.sender.send(delivery, 'duplicate'), plan.delayMs + plan.duplicate)
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
    await Promise.all(targets.map((d) => this.sender.send(d, 'resend')))
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
  idle(waitForChaos: boolean): Promise<void> {
    return this.pending.idle(waitForChaos)
  }

  async close(): Promise<void> {
    this.closed = true
    for (const list of this.deliveries.values()) {
      for (const delivery of list) {
        delivery.timer?.cancel()
        delivery.timer = undefined
      }
    }
    this.pending.cancelSoon()
    this.stop.abort()
    await this.pending.settle()
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
