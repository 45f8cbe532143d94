// The runnable examples shut down on SIGTERM through webhooks.close(): they exit 0 by themselves (a process left to
// SIGTERM's default would die by the signal), after answering what they received.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { resolve } from 'node:path'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { freePort } from '../fixtures/own-redis.js'

const root = resolve(import.meta.dirname, '../..')

describe.each(['express', 'koa', 'hono'])('examples/%s on SIGTERM', (name) => {
  it('closes the receiver and exits 0', async () => {
    const port = await freePort()
    const child = spawn(process.execPath, [`examples/${name}/server.js`], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', WEBHOOK_SECRET: 'whsec_sigterm' },
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

    child.kill('SIGTERM')
    const [code, signal] = await exited
    expect({ code, signal }).toEqual({ code: 0, signal: null })
    expect(stdout).toContain('transaction_settled evt_before_sigterm')
  })
})
