import { describe, expect, it } from 'vitest'
import { HandlerError } from '../errors/index.js'
import { TransactionAbortedError } from '../errors/transaction-aborted.js'
import { memoryStore } from '../memory/store.js'
import type { TransactionOutcome, WebhookStore } from '../store.js'
import { deliverSettled } from '../test-helpers/index.js'
import { recordingReceiver } from '../test-helpers/receiver.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_lease_test'
const setup = <C extends object = {}>(options: Partial<WebhooksOptions<{}, C>> = {}) =>
  recordingReceiver<C>(secret, options)
const deliver = (webhooks: { receive: ReturnType<typeof setup>['webhooks']['receive'] }, eventId: string) =>
  deliverSettled(webhooks, eventId, secret)

describe('stores with transaction', () => {
  /** A memory store whose handlers write into a journal that only reaches `committed` with the done marker. */
  function journalStore(outcome?: TransactionOutcome | 'throw' | 'aborted' | 'connection lost') {
    const inner = memoryStore()
    const committed: string[] = []
    const released: string[] = []
    const store: WebhookStore<{ journal: string[] }> = {
      ...inner,
      claim: (id, lease) => inner.claim(id, lease),
      release: (id, token) => {
        released.push(id)
        return inner.release(id, token)
      },
      async transaction(eventId, token, work) {
        const journal: string[] = []
        const succeeded = await work({ journal })
        if (outcome === 'connection lost') throw new Error('Connection terminated unexpectedly')
        if (!succeeded) return 'rolled_back'
        if (outcome === 'throw') throw new Error('commit failed')
        if (outcome === 'aborted') throw new TransactionAbortedError('a handler left the transaction aborted')
        if (outcome) return outcome
        if (!inner.complete(eventId, token)) return 'lost'
        committed.push(...journal)
        return 'committed'
      },
    }
    return { store, committed, released }
  }

  it("runs the handlers inside it with the store's context and signal, and commits their writes with the marker", async () => {
    const { store, committed } = journalStore()
    const { webhooks } = setup({ store })
    webhooks.on('transaction_settled', (event, { journal, signal }) => {
      expect(signal.aborted).toBe(false)
      journal.push(event.event_id)
    })
    expect((await deliver(webhooks, 'evt_tx')).status).toBe(200)
    expect(committed).toEqual(['evt_tx'])
    const duplicate = await deliver(webhooks, 'evt_tx')
    expect(JSON.parse(duplicate.body).status).toBe('duplicate')
    expect(committed).toEqual(['evt_tx'])
  })

  it('answers 500 and releases the claim when a handler fails (rolled back)', async () => {
    const { store, committed, released } = journalStore()
    const { webhooks, errors } = setup({ store })
    webhooks.onAny((event, { journal }) => {
      journal.push(event.event_id)
      throw new Error('ledger down')
    })
    expect((await deliver(webhooks, 'evt_fail')).status).toBe(500)
    expect(committed).toEqual([])
    expect(released).toEqual(['evt_fail'])
    expect(errors[0]).toBeInstanceOf(HandlerError)
  })

  it('answers 503 without releasing when the claim was lost before the commit (nothing committed)', async () => {
    const { store, released } = journalStore('lost')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, 'evt_lost')).status).toBe(503)
    expect(released).toEqual([])
    expect(errors[0]?.message).toBe(
      "store complete failed for evt_lost: claim lost before commit (its lease ran out, as for a process frozen past it, and another delivery may have taken its event or ordering key); the handlers' writes were rolled back and a retry runs them again",
    )
  })

  it('answers 503 and releases the claim when the transaction itself fails', async () => {
    const { store, released } = journalStore('throw')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    expect((await deliver(webhooks, 'evt_broken')).status).toBe(503)
    expect(released).toEqual(['evt_broken'])
    expect(errors[0]?.message).toBe('store transaction failed for evt_broken: commit failed')
  })

  it('answers a TransactionAbortedError as a handler failure (500, claim released), not a store failure', async () => {
    const { store, committed, released } = journalStore('aborted')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {})
    const answer = await deliver(webhooks, 'evt_aborted')
    expect(answer.status).toBe(500)
    expect(JSON.parse(answer.body).error).toBe('handler_failed')
    expect(committed).toEqual([])
    expect(released).toEqual(['evt_aborted'])
    expect(errors).toHaveLength(1)
    expect(errors[0]).toBeInstanceOf(HandlerError)
    expect(errors[0]?.message).toBe(
      'handler failed for transaction_settled evt_aborted: a handler left the transaction aborted',
    )
    expect(errors[0]?.cause).toMatchObject({ code: 'transaction_aborted' })
  })

  it('answers 503 when the store fails even though a handler failed with it (its connection was lost)', async () => {
    const { store, released } = journalStore('connection lost')
    const { webhooks, errors } = setup({ store })
    webhooks.onAny(() => {
      throw new Error('terminating connection due to administrator command')
    })
    const answer = await deliver(webhooks, 'evt_cut')
    expect(answer.status).toBe(503)
    expect(released).toEqual(['evt_cut'])
    expect(errors.map((e) => e.message)).toEqual([
      'store transaction failed for evt_cut: Connection terminated unexpectedly',
    ])
  })
})
