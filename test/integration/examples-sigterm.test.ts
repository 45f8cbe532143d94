// The runnable examples shut down on SIGTERM in the documented order (core's README "Shutting down"): readiness 503
// at once while deliveries are still handled during the grace, then the server and the receiver close, and they
// exit 0 by themselves (a process left to SIGTERM's default would die by the signal).
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { resolve } from 'node:path'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { freePort } from '../fixtures/own-redis.js'

const root = resolve(import.meta.dirname, '../..')
/**
 * The grace: the test reads the 503, signs and posts a delivery within it (two round trips to a child process, up
 * to half a second each on a loaded machine): 8x room. At 1.5 s a delivery could come after the server closed.
 */
const GRACE_MS = 4000

describe.each(['express', 'koa', 'hono'])('examples/%s on SIGTERM', (name) => {
  it('answers readiness 503 and still handles deliveries during the grace, then closes and exits 0', async () => {
    const port = await freePort()
    const child = spawn(process.execPath, [`examples/${name}/server.js`], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        PORT: String(port),
        HOST: '127.0.0.1',
        WEBHOOK_SECRET: 'whsec_sigterm',
        SHUTDOWN_GRACE_MS: String(GRACE_MS),
      },
    })
    const exited = once(child, 'exit')
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8')
    })
    await new Promise<void>((ready, reject) => {
      child.stdout.on('data', () => {
        if (stdout.includes('listening on')) ready()
      })
      child.on('exit', (code) => reject(new Error(`${name} example exited with ${code}: ${stdout}`)))
    })
    const { body, headers } = await signedDelivery(
      sampleEvent('transaction_settled', { eventId: 'evt_before_sigterm' }),
      'whsec_sigterm',
    )
    const response = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', body, headers })
    expect(response.status).toBe(200)
    await response.text()

    const ready = await fetch(`http://127.0.0.1:${port}/ready`)
    expect(ready.status).toBe(200)
    await ready.text()

    const killedAt = Date.now()
    child.kill('SIGTERM')
    // Readiness turns 503 once the process took the signal (at once, but a loaded machine may take a while to
    // schedule it): asked until then, then a delivery within the grace.
    let draining = await fetch(`http://127.0.0.1:${port}/ready`)
    for (let asked = 1; draining.status === 200 && asked < 500; asked++) {
      await draining.text()
      await new Promise((resolve) => setTimeout(resolve, 20))
      draining = await fetch(`http://127.0.0.1:${port}/ready`)
    }
    expect(draining.status).toBe(503)
    // The readiness route says ready or not, nothing else (why stays in health() and the console).
    expect(await draining.json()).toEqual({ ready: false })
    const during = await signedDelivery(
      sampleEvent('transaction_settled', { eventId: 'evt_during_grace' }),
      'whsec_sigterm',
    )
    const handled = await fetch(`http://127.0.0.1:${port}/webhooks`, {
      method: 'POST',
      body: during.body,
      headers: during.headers,
    })
    expect(handled.status).toBe(200)
    await handled.text()
    const [code, signal] = await exited
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(GRACE_MS - 100) // the grace was waited
    expect(stdout).toContain('transaction_settled evt_before_sigterm')
    expect(stdout).toContain('transaction_settled evt_during_grace')
  })
})
