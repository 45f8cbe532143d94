// A receiver process on postgresStore whose transaction's connection is ended by the server while a handler runs
// (issue 21, item 1): pg_terminate_backend, as a restart, a failover or idle_session_timeout would. The process
// stays alive, the delivery is answered 503 within its deadline, and the retry is handled once.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { startPostgres } from '../../scripts/postgres-server.mjs'
import { postgresHarness } from '../fixtures/postgres-harness.js'

const secret = 'whsec_connection_loss_test'
/**
 * As far as a deadline may go (under the service's 10 s), so what answers is the failure, not the deadline. The
 * delivery fails once the handler's hold ends (HOLD_MS) and its claim is released on a new connection, which after a
 * restart may wait for the server (the pool's 2 s connection timeout): about 4.5 s, which two whole test runs side by
 * side stretched past a 4 s deadline; a cut ends the hold's query at once, or its idle transaction at 2.5 s.
 */
const DEADLINE_MS = 9000
const HOLD_MS = 2500
const { url, admin, tablesOfTest, rowsOf, stateOf } = postgresHarness()
const children: ChildProcess[] = []

afterAll(async () => {
  for (const child of children) {
    if (child.exitCode !== null || child.signalCode !== null) continue
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  }
})

type Line = { port?: number; holding?: string; error?: { code: string; message: string } }

/** Starts the receiver process; resolves with its port and every line it prints. */
async function startReceiver(env: Record<string, string>) {
  const child = spawn(process.execPath, [join(import.meta.dirname, '../fixtures/pg-cut-receiver.mjs')], {
    env: { ...process.env, SECRET: secret, DEADLINE_MS: String(DEADLINE_MS), HOLD_MS: String(HOLD_MS), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  let stderr = ''
  child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  const lines: Line[] = []
  const waiters: (() => void)[] = []
  createInterface({ input: child.stdout! }).on('line', (line) => {
    lines.push(JSON.parse(line) as Line)
    for (const wake of waiters.splice(0)) wake()
  })
  const next = async (test: (line: Line) => boolean): Promise<Line> => {
    for (;;) {
      const found = lines.find(test)
      if (found) return found
      if (child.exitCode !== null) throw new Error(`receiver exited ${child.exitCode}: ${stderr}`)
      await new Promise<void>((resolve) => waiters.push(resolve))
    }
  }
  child.on('exit', () => {
    for (const wake of waiters.splice(0)) wake()
  })
  const { port } = await next((line) => line.port !== undefined)
  return { child, port: port as number, lines, next, stderr: () => stderr }
}

async function post(port: number, eventId: string) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId }), secret)
  const startedAt = performance.now()
  try {
    const response = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', body, headers })
    const answer = (await response.json()) as Record<string, unknown>
    return { status: response.status, answer, ms: Math.round(performance.now() - startedAt) }
  } catch (error) {
    return { status: 0, answer: { failed: String((error as Error).cause ?? error) }, ms: 0 }
  }
}

/** Ends the backend of `appName` found in `state` (polling until there is one), as the server would. */
async function terminate(appName: string, state: string) {
  for (let i = 0; i < 200; i++) {
    const { rows } = await admin.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1 AND state = $2',
      [appName, state],
    )
    if (rows.some((row) => row.ended)) return performance.now()
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no backend of ${appName} in state ${state}`)
}

describe('postgresStore when the server ends the transaction’s connection', () => {
  it.each([
    ['idle in transaction', 'evt_cut_idle', 'idle in transaction'],
    ['inside a query', 'evt_cut_busy', 'active'],
  ])(
    'keeps the process alive, answers 503 by the deadline, and handles the retry once (%s)',
    async (_, eventId, state) => {
      const { store: table, ledger } = await tablesOfTest('event_id text NOT NULL')
      const appName = `payhooks_cut_${randomUUID().slice(0, 8)}`
      const receiver = await startReceiver({
        DATABASE_URL: url,
        TABLE: table,
        LEDGER: ledger,
        APP_NAME: appName,
        LEASE_MS: '60000',
      })
      const answered = post(receiver.port, eventId)
      await receiver.next((line) => line.holding === eventId)
      const cutAt = await terminate(appName, state)
      const cut = await answered
      const answeredAfterCutMs = Math.round(performance.now() - cutAt)
      expect(cut.status, receiver.stderr()).toBe(503)
      // Answered by the failure, so before the deadline: once the deadline answers (deadline_exceeded), nothing else can.
      // (Its time is logged below, not asserted: on a loaded machine the process itself may wait for the CPU.)
      expect(cut.answer.error).toBe('store_unavailable')
      const reported = await receiver.next((line) => line.error !== undefined)
      expect(reported.error?.code).toBe('store_unavailable')
      expect(reported.error?.message).toMatch(new RegExp(`^store transaction failed for ${eventId}: `))
      expect(await stateOf(table, eventId)).toBeUndefined() // claim released on another connection
      expect(await rowsOf(ledger)).toEqual([])

      const retry = await post(receiver.port, eventId)
      console.info(
        `${eventId}: cut delivery ${cut.status} ${cut.answer.error} after ${cut.ms} ms (${answeredAfterCutMs} ms after the cut); retry ${retry.status} ${retry.answer.status} in ${retry.ms} ms`,
      )
      expect(retry).toMatchObject({ status: 200, answer: { status: 'processed' } })
      expect(await rowsOf(ledger)).toEqual([eventId])
      expect(receiver.child.exitCode).toBeNull()
      expect(receiver.child.signalCode).toBeNull()
      expect(receiver.stderr()).toBe('')
    },
    60_000,
  )

  it('keeps the process alive through a real server restart, and the retry handles the event once', async () => {
    // A server of this test's own: the restart would break the other tests' sessions on the shared one.
    const server = await startPostgres()
    const own = new pg.Pool({ connectionString: server.url, max: 2 })
    own.on('error', () => {})
    try {
      const id = randomUUID().replaceAll('-', '').slice(0, 12)
      const ledger = `ledger_${id}`
      await own.query(`CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL)`)
      const receiver = await startReceiver({
        DATABASE_URL: server.url,
        TABLE: `events_${id}`,
        LEDGER: ledger,
        APP_NAME: 'payhooks_restart',
        LEASE_MS: String(DEADLINE_MS + 1000),
      })
      const eventId = 'evt_restart_idle'
      const answered = post(receiver.port, eventId)
      await receiver.next((line) => line.holding === eventId)
      const restartStartedAt = performance.now()
      await server.restart()
      const restartMs = Math.round(performance.now() - restartStartedAt)
      const cut = await answered
      expect(cut.status, receiver.stderr()).toBe(503)
      expect(cut.answer.error).toBe('store_unavailable') // before the deadline, as above
      // The service's retry, its hour shortened: again while another delivery still holds the claim (409, until
      // the release went through or the lease ran out).
      const retryStartedAt = performance.now()
      let retry = await post(receiver.port, eventId)
      while (retry.status === 409 && performance.now() - retryStartedAt < 30_000) {
        await new Promise((resolve) => setTimeout(resolve, 200))
        retry = await post(receiver.port, eventId)
      }
      const retryMs = Math.round(performance.now() - retryStartedAt)
      console.info(
        `restart (${restartMs} ms): cut delivery ${cut.status} ${cut.answer.error} after ${cut.ms} ms; retried until ${retry.status} ${retry.answer.status} in ${retryMs} ms`,
      )
      expect(retry).toMatchObject({ status: 200, answer: { status: 'processed' } })
      const { rows } = await own.query(`SELECT event_id FROM ${ledger}`)
      expect(rows).toEqual([{ event_id: eventId }])
      expect(receiver.child.exitCode).toBeNull()
      expect(receiver.child.signalCode).toBeNull()
      expect(receiver.stderr()).toBe('')
      const exited = once(receiver.child, 'exit')
      receiver.child.kill('SIGTERM')
      await exited
    } finally {
      await own.end()
      server.stop()
    }
  }, 120_000)
})
