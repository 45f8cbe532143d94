// Which secret verified a delivery: on the handler context, in the log (when not the first), for rotation.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { memoryDeadLetterStore } from '../dead-letters/index.js'
import type { LogFields } from '../logging/log.js'
import { memoryStore } from '../memory/store.js'
import { inProcessQueue } from '../queue/queue.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'
import type { HandlerContext, RawDelivery } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const NEW = 'whsec_rotation_new'
const OLD = 'whsec_rotation_old'

async function deliver(webhooks: { receive(d: RawDelivery): Promise<{ status: number }> }, id: string, key: string) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: id }), key)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

function structured() {
  const infos: [LogFields, string][] = []
  const logger = { error() {}, warn() {}, info: (fields: LogFields, message: string) => infos.push([fields, message]) }
  return { logger: logger as unknown as WebhooksOptions['logger'], infos }
}

function receiver(options: Partial<WebhooksOptions<{}, object>>) {
  const seen: HandlerContext['verifiedWith'][] = []
  const webhooks = createWebhooks({ secret: NEW, logger: { error() {} }, ...options })
  webhooks.on('transaction_settled', (_event, context) => {
    seen.push(context.verifiedWith)
  })
  return { webhooks, seen }
}

describe('context.verifiedWith', () => {
  it('is index 0 with one secret', async () => {
    const { webhooks, seen } = receiver({})
    expect((await deliver(webhooks, 'evt_vw_1', NEW)).status).toBe(200)
    expect(seen).toEqual([{ index: 0 }])
  })

  it('names which secret of a list verified, by position and label', async () => {
    const { webhooks, seen } = receiver({ secret: [{ secret: NEW, label: 'sub_new' }, OLD] })
    await deliver(webhooks, 'evt_vw_2', OLD)
    await deliver(webhooks, 'evt_vw_3', NEW)
    expect(seen).toEqual([{ index: 1 }, { index: 0, label: 'sub_new' }])
  })

  it('is the same object for every delivery a secret verifies (nothing allocated per delivery)', async () => {
    const { webhooks, seen } = receiver({ secret: [NEW, { secret: OLD, label: 'sub_old' }] })
    for (const id of ['evt_vw_4', 'evt_vw_5']) await deliver(webhooks, id, OLD)
    expect(seen[0]).toEqual({ index: 1, label: 'sub_old' })
    expect(seen[1]).toBe(seen[0])
  })

  it("comes from a resolver's answer, labels included", async () => {
    const { webhooks, seen } = receiver({ secret: async () => [NEW, { secret: OLD, label: 'sub_old' }] })
    await deliver(webhooks, 'evt_vw_6', OLD)
    expect(seen).toEqual([{ index: 1, label: 'sub_old' }])
  })

  it("is on a store's own context too (a store with transaction)", async () => {
    const inner = memoryStore()
    const store: WebhookStore<{ db: string }> = {
      ...inner,
      claim: (id, lease) => inner.claim(id, lease),
      release: (id, token) => inner.release(id, token),
      async transaction(eventId, token, work) {
        if (!(await work({ db: 'client' }))) return 'rolled_back'
        return inner.complete(eventId, token) ? 'committed' : 'lost'
      },
    }
    const webhooks = createWebhooks({ secret: [NEW, OLD], store, logger: { error() {} } })
    const seen: unknown[] = []
    webhooks.on('transaction_settled', (_event, { db, verifiedWith, signal }) => {
      seen.push({ db, verifiedWith, aborted: signal.aborted })
    })
    expect((await deliver(webhooks, 'evt_vw_7', OLD)).status).toBe(200)
    expect(seen).toEqual([{ db: 'client', verifiedWith: { index: 1 }, aborted: false }])
  })

  it('is undefined in a queue worker, which gets the event and not how it was verified', async () => {
    const queue = inProcessQueue()
    const { webhooks, seen } = receiver({ secret: [NEW, OLD], queue })
    expect((await deliver(webhooks, 'evt_vw_8', OLD)).status).toBe(200)
    await queue.drain()
    expect(seen).toEqual([undefined])
  })

  it('is set on a replay of a dead letter, by the secret that verifies its stored bytes now', async () => {
    const webhooks = createWebhooks({
      secret: [NEW, { secret: OLD, label: 'sub_old' }],
      deadLetters: memoryDeadLetterStore(),
      logger: { error() {} },
    })
    const seen: unknown[] = []
    let failing = true
    webhooks.on('transaction_settled', (_event, { verifiedWith }) => {
      if (failing) throw new Error('ledger down')
      seen.push(verifiedWith)
    })
    // Signed 72 hours ago: on the service's last tries, so a failure is parked.
    const createdAt = new Date(Date.now() - 72 * 3_600_000).toISOString()
    const event = { ...sampleEvent('transaction_settled', { eventId: 'evt_vw_12' }), created_at: createdAt }
    const { body, headers } = await signedDelivery(event, OLD)
    await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
    failing = false
    expect(await webhooks.replay('evt_vw_12')).toEqual({ eventId: 'evt_vw_12', status: 'processed' })
    expect(seen).toEqual([{ index: 1, label: 'sub_old' }])
  })

  it('refuses a labeled secret that is not a non-empty string', () => {
    expect(() => createWebhooks({ secret: [{ secret: '', label: 'x' }] })).toThrow(TypeError)
    expect(() => createWebhooks({ secret: [{ secret: NEW, label: 7 as unknown as string }] })).toThrow(TypeError)
  })
})

describe('the log of which secret verified', () => {
  it('writes an info line when a secret other than the first verified, none for the first', async () => {
    const { logger, infos } = structured()
    const { webhooks } = receiver({ secret: [NEW, { secret: OLD, label: 'sub_old' }], logger })
    await deliver(webhooks, 'evt_vw_9', NEW)
    expect(infos).toEqual([])
    await deliver(webhooks, 'evt_vw_10', OLD)
    expect(infos).toEqual([
      [
        {
          code: 'verified_with_secret',
          event_id: 'evt_vw_10',
          event_type: 'transaction_settled',
          secret_index: 1,
          secret_label: 'sub_old',
        },
        '[payhooks] transaction_settled evt_vw_10 verified with secret 1 (sub_old), not the first of the list',
      ],
    ])
    expect(JSON.stringify(infos)).not.toContain(OLD)
  })

  it('says nothing to a logger without info (the one-line shape)', async () => {
    const lines: unknown[] = []
    const { webhooks } = receiver({ secret: [NEW, OLD], logger: { error: (line) => lines.push(line) } })
    expect((await deliver(webhooks, 'evt_vw_11', OLD)).status).toBe(200)
    expect(lines).toEqual([])
  })
})
