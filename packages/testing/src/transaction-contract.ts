import { randomUUID } from 'node:crypto'
import { createWebhooks, type WebhookError, type WebhookStore } from '@payhooks/core'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { sampleEvent } from './samples.js'
import { signedDelivery } from './signing.js'
import { crashRun, POINTS } from './transaction-contract/crash.js'
import type {
  TransactionContractOptions,
  TransactionStore,
  TransactionStoreFactory,
} from './transaction-contract/types.js'

export type {
  TransactionContractOptions,
  TransactionStore,
  TransactionStoreFactory,
} from './transaction-contract/types.js'

const secret = 'whsec_transaction_contract'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Exactly-once effects of a store whose handlers write through `context.db` in the transaction of the event's done
 * marker (`WebhookStore.transaction`), as a vitest suite run on the real database: a write through `db` commits with
 * the done marker (a copy of the event is a duplicate and writes nothing); a handler that throws after writing leaves
 * no row; the handlers of one event share its transaction; a claim lost before the commit rolls the write back; an
 * SQL error a handler caught fails the event unless caught inside a savepoint; and receiver processes killed
 * (SIGKILL) before, during and after the write end, after the service's retries, with exactly one row per event.
 * Each test makes its own store table (through `makeStore`, created by `init`) and ledger table, dropped afterwards.
 *
 * @example
 * // test/drizzle-store.test.ts (receiver.mjs exports the same makeStore and write)
 * import { transactionContract } from '@payhooks/testing/transaction-contract'
 * import { makeStore, write } from './receiver.mjs'
 *
 * transactionContract('drizzleStore', makeStore, {
 *   write,
 *   fail: (tx) => tx.execute(sql`SELECT no_such_column FROM pg_class`),
 *   savepoint: (tx, work) => tx.transaction(work),
 *   sql: async (text, values) => (await pool.query(text, values)).rows,
 *   receiver: new URL('./receiver.mjs', import.meta.url),
 * })
 */
export function transactionContract<Db>(
  name: string,
  makeStore: TransactionStoreFactory<Db>,
  options: TransactionContractOptions<Db>,
): void {
  const { write, fail, savepoint, sql } = options
  const made = new Set<WebhookStore>()
  const tables: string[] = []
  afterEach(async () => {
    const stores = [...made]
    made.clear()
    for (const store of stores) await store.shutdown?.()
  })
  afterAll(async () => {
    for (const table of tables) await sql(`DROP TABLE IF EXISTS ${table}`)
  })

  /** A store table and a ledger table of this test's own, and instances of a store on it. */
  async function tablesOfTest() {
    const id = randomUUID().replaceAll('-', '').slice(0, 12)
    const table = `tc_events_${id}`
    const ledger = `tc_ledger_${id}`
    tables.push(ledger, `${table}_fences`, table)
    await sql(
      options.ledgerSql?.(ledger) ??
        `CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL, pid int NOT NULL)`,
    )
    const instance = async () => {
      const store = await makeStore(table)
      made.add(store)
      await store.init?.()
      return store
    }
    const rows = async () =>
      (await sql(`SELECT event_id FROM ${ledger} ORDER BY id`)).map((row) => row.event_id as string)
    return { table, ledger, instance, rows }
  }

  function receiver(store: TransactionStore<Db>) {
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret, store, checkAtStart: false })
    webhooks.onError((error) => errors.push(error))
    // Each copy of an event carries the same bytes, as the service's retries do.
    const signed = new Map<string, ReturnType<typeof signedDelivery>>()
    const deliver = async (eventId: string) => {
      if (!signed.has(eventId))
        signed.set(eventId, signedDelivery(sampleEvent('transaction_settled', { eventId }), secret))
      const { body, headers } = await (signed.get(eventId) as ReturnType<typeof signedDelivery>)
      const result = await webhooks.receive({
        method: 'POST',
        body,
        getHeader: (header) => (headers as Record<string, string>)[header],
      })
      return { status: result.status, body: JSON.parse(result.body) as { status?: string; error?: string } }
    }
    return { webhooks, errors, deliver }
  }

  describe(`transaction contract: ${name}`, () => {
    it('commits a write through db with the done marker; a copy of the event is a duplicate and writes nothing', async () => {
      const { ledger, instance, rows } = await tablesOfTest()
      const store = await instance()
      const { webhooks, errors, deliver } = receiver(store)
      let runs = 0
      webhooks.on('transaction_settled', async (event, { db }) => {
        runs++
        await write(db, ledger, event.event_id)
      })
      expect(await deliver('evt_commit')).toMatchObject({ status: 200, body: { status: 'processed' } })
      expect(await deliver('evt_commit')).toMatchObject({ status: 200, body: { status: 'duplicate' } })
      expect(runs).toBe(1)
      expect(await rows()).toEqual(['evt_commit'])
      expect(await store.claim('evt_commit', 1000)).toMatchObject({ status: 'done' })
      expect(errors).toEqual([])
    })

    it('leaves no row when a handler throws after writing, and the retry writes one', async () => {
      const { ledger, instance, rows } = await tablesOfTest()
      const { webhooks, errors, deliver } = receiver(await instance())
      let fail = true
      webhooks.on('transaction_settled', async (event, { db }) => {
        await write(db, ledger, event.event_id)
        if (fail) throw new Error('the ledger refused the settlement')
      })
      expect((await deliver('evt_throws')).status).toBe(500)
      expect(await rows()).toEqual([])
      fail = false
      expect((await deliver('evt_throws')).status).toBe(200)
      expect(await rows()).toEqual(['evt_throws'])
      expect(errors.map((error) => error.code)).toEqual(['handler_failed'])
    })

    it("gives the handlers of an event one transaction: a second handler's failure rolls back the first's write", async () => {
      const { ledger, instance, rows } = await tablesOfTest()
      const { webhooks, deliver } = receiver(await instance())
      const seen: Db[] = []
      let fail = true
      webhooks.on('transaction_settled', async (event, { db }) => {
        seen.push(db)
        await write(db, ledger, event.event_id)
      })
      webhooks.onAny(async (event, { db }) => {
        seen.push(db)
        await write(db, ledger, `${event.event_id}:audit`)
        if (fail) throw new Error('audit refused')
      })
      expect((await deliver('evt_shared')).status).toBe(500)
      expect(seen[0]).toBe(seen[1])
      expect(await rows()).toEqual([])
      fail = false
      expect((await deliver('evt_shared')).status).toBe(200)
      expect((await rows()).sort()).toEqual(['evt_shared', 'evt_shared:audit'])
    })

    it('rolls the write back when the claim was lost before the commit (its lease ran out and another took it)', async () => {
      const { ledger, instance, rows } = await tablesOfTest()
      const [store, other] = [await instance(), await instance()]
      const claim = await store.claim('evt_lost', 300)
      if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`)
      let taken: unknown
      const outcome = await (store.transaction as NonNullable<TransactionStore<Db>['transaction']>)(
        'evt_lost',
        claim.token,
        async ({ db }) => {
          await write(db, ledger, 'evt_lost')
          await sleep(500)
          taken = await other.claim('evt_lost', 60_000)
          return true
        },
      )
      expect(taken).toMatchObject({ status: 'claimed' })
      expect(outcome).toBe('lost')
      expect(await rows()).toEqual([])
      expect(await store.claim('evt_lost', 1000)).toMatchObject({ status: 'processing' })
    })

    it('fails the event (transaction_aborted) when a handler caught an SQL error, and commits when it caught it inside a savepoint', async () => {
      const { ledger, instance, rows } = await tablesOfTest()
      const { webhooks, errors, deliver } = receiver(await instance())
      let inSavepoint = false
      webhooks.on('transaction_settled', async (event, { db }) => {
        await write(db, ledger, event.event_id)
        if (inSavepoint) await savepoint(db, (inner) => fail(inner)).catch(() => {})
        else await fail(db).catch(() => {})
      })
      expect(await deliver('evt_caught')).toMatchObject({ status: 500, body: { error: 'handler_failed' } })
      expect(errors[0]?.cause).toMatchObject({ name: 'TransactionAbortedError', code: 'transaction_aborted' })
      expect(await rows()).toEqual([])
      inSavepoint = true
      expect(await deliver('evt_caught')).toMatchObject({ status: 200, body: { status: 'processed' } })
      expect(await rows()).toEqual(['evt_caught'])
    })

    const events = options.crash?.events ?? 60
    const killsPerPoint = options.crash?.killsPerPoint ?? 2
    it(`ends with exactly one row per event when receiver processes are killed (SIGKILL) before, during and after the write: ${events} events, delivered twice, ${killsPerPoint} kills at each point`, async () => {
      const { table, ledger } = await tablesOfTest()
      // The table made once, before the processes race to make it.
      const first = await makeStore(table)
      made.add(first)
      await first.init?.()
      const { ids, kills, fired } = await crashRun({
        receiver: options.receiver,
        table,
        ledger,
        secret,
        events,
        killsPerPoint,
      })
      const counts = new Map(
        (await sql(`SELECT event_id, count(*) AS n FROM ${ledger} GROUP BY event_id`)).map((row) => [
          String(row.event_id),
          Number(row.n),
        ]),
      )
      expect(Object.fromEntries(POINTS.map((point) => [point, fired[point] ?? 0]))).toEqual(
        Object.fromEntries(POINTS.map((point) => [point, killsPerPoint])),
      )
      expect(kills).toBeGreaterThanOrEqual(killsPerPoint * POINTS.length)
      expect(ids.filter((id) => counts.get(id) !== 1).map((id) => `${id}: ${counts.get(id) ?? 0} rows`)).toEqual([])
      expect(counts.size).toBe(events)
    }, 120_000)
  })
}
