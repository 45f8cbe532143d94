// The dashboard's event stream (GET /_sandbox/events) read as plain server-sent events over real HTTP.
import { createManualClock, createSandbox, type Sandbox } from '@payhooks/sandbox'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Receiver, startReceiver } from '../fixtures/sandbox-receivers.js'

const START = Date.parse('2026-11-02T15:00:00Z')
const HOUR = 3_600_000

interface ServerSentEvent {
  event: string
  // biome-ignore lint/suspicious/noExplicitAny: tests read fields of the JSON payloads directly
  data: any
}

/** Reads one event stream; `next(name)` resolves with the next event of that name, leaving the others queued. */
async function openStream(url: string) {
  const controller = new AbortController()
  const response = await fetch(url, { signal: controller.signal })
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  const queue: ServerSentEvent[] = []
  async function next(name: string): Promise<ServerSentEvent> {
    for (;;) {
      const index = queue.findIndex((e) => e.event === name)
      if (index >= 0) return queue.splice(index, 1)[0] as ServerSentEvent
      const { value, done } = await reader.read()
      if (done) throw new Error(`stream ended before a ${name} event`)
      buffer += decoder.decode(value, { stream: true })
      let end = buffer.indexOf('\n\n')
      while (end >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const field = (key: string) =>
          block
            .split('\n')
            .find((line) => line.startsWith(`${key}: `))
            ?.slice(key.length + 2)
        const event = field('event')
        const data = field('data')
        if (event && data !== undefined) queue.push({ event, data: JSON.parse(data) })
        end = buffer.indexOf('\n\n')
      }
    }
  }
  return { response, next, close: () => controller.abort() }
}

let sandbox: Sandbox
let receiver: Receiver
let base: string

beforeAll(async () => {
  receiver = await startReceiver((_request, index) => (index === 0 ? 500 : 200))
  sandbox = createSandbox({ clock: createManualClock({ start: START }) })
  base = (await sandbox.listen()).url
})

afterAll(async () => {
  await sandbox.close()
  await receiver.close()
})

describe('GET /_sandbox/events', () => {
  it('starts with a hello, then streams subscriptions, each attempt of an event, and the clock', async () => {
    const stream = await openStream(`${base}/_sandbox/events`)
    try {
      expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
      const hello = (await stream.next('hello')).data
      expect(hello).toMatchObject({ clock: { now: START, manual: true }, chaos: null, subscriptions: [], log: [] })
      expect(hello.eventTypes).toContain('transaction_settled')
      expect(hello.merchantIds).toEqual([1234, 5678])

      const { id, signature_secret } = sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
      const subscriptions = (await stream.next('subscriptions')).data
      expect(subscriptions).toEqual([
        { id, url: receiver.url, event_types: ['transaction_settled'], is_active: true, owner: 'reseller 1001' },
      ])
      expect(JSON.stringify(subscriptions)).not.toContain(signature_secret)

      const { eventId } = await sandbox.emit('transaction_settled')
      let entry = (await stream.next('entry')).data
      while (entry.deliveries[0]?.nextAttemptTime === undefined) entry = (await stream.next('entry')).data
      expect(entry.eventId).toBe(eventId)
      expect(entry.deliveries[0]).toMatchObject({ state: 'pending', nextAttemptTime: START + HOUR })
      expect(entry.deliveries[0].attempts.map((a: { status: number }) => a.status)).toEqual([500])

      await sandbox.advance(HOUR)
      expect((await stream.next('clock')).data).toEqual({ now: START + HOUR, manual: true })
      while (entry.deliveries[0].state !== 'delivered') entry = (await stream.next('entry')).data
      expect(entry.deliveries[0].attempts.map((a: { retry: number; status: number }) => [a.retry, a.status])).toEqual([
        [0, 500],
        [1, 200],
      ])
    } finally {
      stream.close()
    }
  })
})
