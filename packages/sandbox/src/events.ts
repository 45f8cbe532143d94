// Server-sent events for the dashboard: a `hello` snapshot on connect, then `entry` (a log entry
// that changed), `removed` (dropped from the log), `subscriptions` (the whole list) and `clock`.
import type { ServerResponse } from 'node:http'
import type { DashboardClock, DashboardEvents, DashboardSubscription, SandboxLogEntry } from './types.js'

/** Where the hub reads what changed, once per flush. */
export interface LiveSource {
  entry(eventId: string): SandboxLogEntry | undefined
  subscriptions(): DashboardSubscription[]
  clock(): DashboardClock
}

const KEEP_ALIVE_MS = 15_000
/** A dashboard that reads slower than this much buffered output is dropped; it reconnects. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024

/** The open event streams. Changes are coalesced and sent on the next turn of the event loop. */
export class EventHub {
  private readonly clients = new Set<ServerResponse>()
  private readonly dirty = new Set<string>()
  private subscriptionsDirty = false
  private scheduled: NodeJS.Immediate | undefined
  private keepAlive: NodeJS.Timeout | undefined

  constructor(private readonly source: LiveSource) {}

  /** Turns `response` into an event stream that starts with `hello`. */
  open(response: ServerResponse, hello: DashboardEvents['hello']): void {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'x-accel-buffering': 'no',
    })
    response.write('retry: 1000\n\n')
    this.send(response, 'hello', hello)
    this.clients.add(response)
    response.on('close', () => {
      this.clients.delete(response)
      if (this.clients.size === 0) this.stopKeepAlive()
    })
    if (!this.keepAlive) {
      this.keepAlive = setInterval(() => {
        for (const client of this.clients) client.write(': keep-alive\n\n')
      }, KEEP_ALIVE_MS)
      this.keepAlive.unref()
    }
  }

  entryChanged(eventId: string): void {
    if (this.clients.size === 0) return
    this.dirty.add(eventId)
    this.schedule()
  }

  subscriptionsChanged(): void {
    if (this.clients.size === 0) return
    this.subscriptionsDirty = true
    this.schedule()
  }

  clockChanged(): void {
    this.broadcast('clock', this.source.clock())
  }

  close(): void {
    if (this.scheduled) clearImmediate(this.scheduled)
    this.stopKeepAlive()
    for (const client of this.clients) client.end()
    this.clients.clear()
  }

  private stopKeepAlive(): void {
    if (this.keepAlive) clearInterval(this.keepAlive)
    this.keepAlive = undefined
  }

  private schedule(): void {
    this.scheduled ??= setImmediate(() => {
      this.scheduled = undefined
      this.flush()
    })
  }

  private flush(): void {
    const ids = [...this.dirty]
    this.dirty.clear()
    for (const eventId of ids) {
      const entry = this.source.entry(eventId)
      if (entry) this.broadcast('entry', entry)
      else this.broadcast('removed', { eventId })
    }
    if (this.subscriptionsDirty) {
      this.subscriptionsDirty = false
      this.broadcast('subscriptions', this.source.subscriptions())
    }
  }

  private broadcast<K extends keyof DashboardEvents>(name: K, data: DashboardEvents[K]): void {
    if (this.clients.size === 0) return
    for (const client of this.clients) this.send(client, name, data)
  }

  private send<K extends keyof DashboardEvents>(client: ServerResponse, name: K, data: DashboardEvents[K]): void {
    if (client.writableLength > MAX_BUFFERED_BYTES) {
      client.destroy()
      return
    }
    // JSON.stringify escapes line breaks, so one data line carries the whole value.
    client.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
  }
}
