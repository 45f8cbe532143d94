// webhooks.health(): the receiver's own checks (closing, draining, event slots), its stores' checks, bounded in
// time and free of secrets; the start-up check that logs what fails; the readiness answer.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { memoryStore } from '../memory/store.js'
import { nodeHealth } from '../node.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'
import { deliverSettled, gate, recorder } from '../test-helpers/index.js'
import { healthAnswer, webHealth } from './index.js'
import type { HealthCheck } from './types.js'

const secret = 'whsec_health_test_secret'

/** A memoryStore whose health() answers with `health`. */
function storeWith(health: WebhookStore['health']): WebhookStore {
  return { ...memoryStore(), health }
}

const names = (checks: HealthCheck[]) => checks.map((check) => check.name)

describe('webhooks.health()', () => {
  it('is ready on a memoryStore, naming each check', async () => {
    const webhooks = createWebhooks({ secret, store: memoryStore(), checkAtStart: false })
    const report = await webhooks.health()
    expect(report.ready).toBe(true)
    expect(names(report.checks)).toEqual(['closing', 'store', 'memory_store_window'])
    expect(report.checks.find((check) => check.name === 'store')).toMatchObject({ ok: true, latencyMs: 0 })
  })

  it('reports a store whose check hangs as failed once timeoutMs passes, never hanging itself', async () => {
    const webhooks = createWebhooks({ secret, store: storeWith(() => new Promise(() => {})), checkAtStart: false })
    const started = Date.now()
    const report = await webhooks.health({ timeoutMs: 100 })
    expect(Date.now() - started).toBeLessThan(1000)
    expect(report.ready).toBe(false)
    expect(report.checks.find((check) => check.name === 'store')).toMatchObject({
      ok: false,
      detail: 'no answer within 100 ms',
    })
  })

  it("reports a store whose check rejects by the error's code alone, never its message", async () => {
    const failing = storeWith(() =>
      Promise.reject(
        Object.assign(new Error('connect to redis://:hunter2@db.internal failed'), { code: 'ECONNREFUSED' }),
      ),
    )
    const webhooks = createWebhooks({ secret, store: failing, checkAtStart: false })
    const report = await webhooks.health()
    expect(report.ready).toBe(false)
    expect(JSON.stringify(report)).not.toMatch(/hunter2|db\.internal|redis:/)
    expect(report.checks.find((check) => check.name === 'store')?.detail).toBe('its health check failed (ECONNREFUSED)')
  })

  it('leaves ready true when only warnings fail, false when an error does', async () => {
    const warning: HealthCheck = { name: 'redis_maxmemory_policy', ok: false, severity: 'warning' }
    const warned = createWebhooks({ secret, store: storeWith(async () => [warning]), checkAtStart: false })
    expect((await warned.health()).ready).toBe(true)
    const failed = createWebhooks({
      secret,
      store: storeWith(async () => [{ name: 'postgres_migration_001', ok: false }]),
      checkAtStart: false,
    })
    expect((await failed.health()).ready).toBe(false)
  })

  it('is not ready once drain() is called, while deliveries are still handled; then close() adds closing', async () => {
    const webhooks = createWebhooks({ secret, store: memoryStore(), checkAtStart: false })
    const handled: string[] = []
    webhooks.on('transaction_settled', (event) => {
      handled.push(event.event_id)
    })
    webhooks.drain()
    const report = await webhooks.health()
    expect(report.ready).toBe(false)
    expect(report.checks.filter((check) => !check.ok).map((check) => check.name)).toEqual(['draining'])
    expect((await deliverSettled(webhooks, 'evt_drain', secret)).status).toBe(200)
    expect(handled).toEqual(['evt_drain'])
    const closing = webhooks.close()
    const during = await webhooks.health()
    expect(during.ready).toBe(false)
    expect(during.checks.find((check) => check.name === 'closing')?.ok).toBe(false)
    await closing
  })

  it('shows event slots saturated, with deliveries waiting, as a warning', async () => {
    const webhooks = createWebhooks({ secret, store: memoryStore(), maxConcurrentEvents: 1, checkAtStart: false })
    const held = gate()
    webhooks.onAny(() => held.promise)
    const first = deliverSettled(webhooks, 'evt_slot_1', secret)
    const second = deliverSettled(webhooks, 'evt_slot_2', secret)
    await new Promise((resolve) => setTimeout(resolve, 20))
    const report = await webhooks.health()
    expect(report.ready).toBe(true)
    expect(report.checks.find((check) => check.name === 'event_slots')).toMatchObject({
      ok: false,
      severity: 'warning',
      detail: '1 of 1 event slots in use, 1 waiting',
    })
    held.open()
    await Promise.all([first, second])
    expect((await webhooks.health()).checks.find((check) => check.name === 'event_slots')?.ok).toBe(true)
  })
})

describe('shared health checks', () => {
  /** Freezes the clock the shared result's age is read from: only the test moves it (vi.setSystemTime). */
  function frozenClock() {
    vi.useFakeTimers({ toFake: ['Date'] })
    onTestFinished(() => {
      vi.useRealTimers()
    })
    const start = Date.now()
    return (ms: number) => vi.setSystemTime(start + ms)
  }

  /** A store whose health() counts its calls and answers `ok` after `ms`. */
  function countingStore(ms = 20) {
    const state = { calls: 0, ok: true }
    const store = storeWith(async () => {
      state.calls++
      await new Promise((resolve) => setTimeout(resolve, ms))
      return [{ name: 'backend', ok: state.ok }]
    })
    return { store, state }
  }

  it('lets concurrent calls wait for one check of the stores, and reuses its result for maxAgeMs', async () => {
    const at = frozenClock()
    const { store, state } = countingStore()
    const webhooks = createWebhooks({ secret, store, checkAtStart: false })
    const reports = await Promise.all(Array.from({ length: 100 }, () => webhooks.health({ maxAgeMs: 300 })))
    expect(state.calls).toBe(1)
    expect(reports.every((report) => report.ready)).toBe(true)
    at(299)
    await webhooks.health({ maxAgeMs: 300 })
    expect(state.calls).toBe(1)
    state.ok = false
    at(300)
    const after = await webhooks.health({ maxAgeMs: 300 })
    expect(state.calls).toBe(2)
    expect(after.ready).toBe(false)
    expect((await webhooks.health({ maxAgeMs: 0 })).ready).toBe(false)
    expect(state.calls).toBe(3)
  })

  it('reuses a result for 1 s by default, never past it', async () => {
    const at = frozenClock()
    const { store, state } = countingStore(0)
    const webhooks = createWebhooks({ secret, store, checkAtStart: false })
    await webhooks.health()
    at(999)
    await webhooks.health()
    expect(state.calls).toBe(1)
    at(1000)
    await webhooks.health()
    expect(state.calls).toBe(2)
  })

  it("reads the receiver's own checks afresh: drain() shows at once in a shared result", async () => {
    const { store, state } = countingStore(0)
    const webhooks = createWebhooks({ secret, store, checkAtStart: false })
    expect((await webhooks.health()).ready).toBe(true)
    webhooks.drain()
    const drained = await webhooks.health()
    expect(state.calls).toBe(1)
    expect(drained.ready).toBe(false)
    expect(drained.checks.filter((check) => !check.ok).map((check) => check.name)).toEqual(['draining'])
  })

  it('does not share a check made with another timeoutMs, and refuses an invalid maxAgeMs', async () => {
    const { store, state } = countingStore(0)
    const webhooks = createWebhooks({ secret, store, checkAtStart: false })
    await webhooks.health({ timeoutMs: 1000 })
    await webhooks.health({ timeoutMs: 500 })
    expect(state.calls).toBe(2)
    await expect(webhooks.health({ maxAgeMs: -1 })).rejects.toThrow(/maxAgeMs/)
  })
})

describe('the start-up check', () => {
  it('logs each failed check once with its fix, without delaying the first delivery', async () => {
    const { logger, calls } = recorder()
    let answered = false
    // The check answers when the test says, not after a time a loaded machine may outrun (it failed so at 50 ms).
    const checked = gate()
    const store = storeWith(async () => {
      await checked.promise
      return [
        { name: 'postgres_migration_002', ok: false, detail: 'table x is missing', fix: 'apply sql/002.sql' },
        { name: 'redis_persistence', ok: false, severity: 'warning', detail: 'none', fix: 'appendonly yes' },
        { name: 'fine', ok: true },
      ]
    })
    const webhooks = createWebhooks({ secret, store, logger })
    webhooks.on('transaction_settled', () => {
      answered = true
    })
    expect((await deliverSettled(webhooks, 'evt_first', secret)).status).toBe(200)
    expect(answered).toBe(true)
    expect(calls).toEqual([]) // the check has not answered yet: the delivery did not wait for it
    checked.open()
    await vi.waitFor(() => expect(calls.length).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 20 })
    expect(calls).toEqual([
      {
        level: 'error',
        fields: { code: 'health_check_failed', check: 'postgres_migration_002' },
        message: '[payhooks] health check postgres_migration_002 failed: table x is missing. Fix: apply sql/002.sql',
      },
      {
        level: 'warn',
        fields: { code: 'health_check_failed', check: 'redis_persistence' },
        message: '[payhooks] health check redis_persistence failed: none. Fix: appendonly yes',
      },
    ])
  })

  it('logs nothing when every check passes, nor once the receiver closes first', async () => {
    const { logger, calls } = recorder()
    createWebhooks({ secret, store: memoryStore(), logger })
    const closed = createWebhooks({ secret, store: storeWith(async () => [{ name: 'x', ok: false }]), logger })
    await closed.close()
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(calls).toEqual([])
  })
})

describe('health checks and close()', () => {
  it('close() waits for the start-up check of the stores under way, which gets its signal aborted; nothing runs after', async () => {
    const steps: string[] = []
    let aborted = false
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    // A check of several commands, one after the other, as redisStore's is (PING, INFO, CONFIG GET...).
    const store = storeWith(async (signal) => {
      signal.addEventListener('abort', () => {
        aborted = true
      })
      for (const command of ['ping', 'info', 'config']) {
        steps.push(command)
        await sleep(40)
      }
      return [{ name: 'redis', ok: true }]
    })
    const webhooks = createWebhooks({ secret, store, logger: recorder().logger })
    await sleep(20) // the start-up check is under way
    expect(steps).toEqual(['ping'])
    await webhooks.close()
    expect(aborted).toBe(true)
    const atClose = [...steps]
    expect(atClose).toEqual(['ping', 'info', 'config'])
    await sleep(200)
    expect(steps).toEqual(atClose)
  })

  it('starts no check of the stores once closing: health() then reports the receiver closing', async () => {
    let checked = 0
    const webhooks = createWebhooks({
      secret,
      store: storeWith(async () => {
        checked++
        return [{ name: 'redis', ok: true }]
      }),
      checkAtStart: false,
    })
    const closed = webhooks.close()
    const report = await webhooks.health({ maxAgeMs: 0 })
    await closed
    expect(await webhooks.health({ maxAgeMs: 0 })).toEqual(report)
    expect(report).toMatchObject({ ready: false, checks: [{ name: 'closing', ok: false }] })
    expect(names(report.checks)).toEqual(['closing'])
    expect(checked).toBe(0)
  })

  it("close() waits for a store's check at most its timeoutMs", async () => {
    const webhooks = createWebhooks({ secret, store: storeWith(() => new Promise(() => {})), checkAtStart: false })
    void webhooks.health({ timeoutMs: 60_000 })
    const started = Date.now()
    await webhooks.close({ timeoutMs: 100 })
    expect(Date.now() - started).toBeLessThan(1000)
  })
})

describe('readiness answers', () => {
  it('answer 200 when ready and 503 when not, and nothing else: no check name, store kind or latency', async () => {
    const ready = await healthAnswer(createWebhooks({ secret, store: memoryStore(), checkAtStart: false }))
    expect(ready.status).toBe(200)
    expect(JSON.parse(ready.body)).toEqual({ ready: true })
    const down = createWebhooks({
      secret,
      store: storeWith(async () => [
        { name: 'redis', ok: false, detail: 'secret detail', latencyMs: 3 },
        { name: 'redis_persistence', ok: false, severity: 'warning', detail: 'no persistence' },
      ]),
      checkAtStart: false,
    })
    const response = await webHealth(down)()
    expect(response.status).toBe(503)
    expect(response.headers.get('cache-control')).toBe('no-store')
    expect(await response.json()).toEqual({ ready: false })
  })

  it('are served on node:http by nodeHealth in one line', async () => {
    const webhooks = createWebhooks({ secret, store: memoryStore(), checkAtStart: false })
    const server = createServer(nodeHealth(webhooks)).listen(0, '127.0.0.1')
    await new Promise((resolve) => server.once('listening', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/ready`
    try {
      expect((await fetch(url)).status).toBe(200)
      webhooks.drain()
      const response = await fetch(url)
      expect(response.status).toBe(503)
      expect(await response.json()).toEqual({ ready: false })
    } finally {
      server.close()
    }
  })
})
