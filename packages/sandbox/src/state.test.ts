import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SIGNATURE_HEADER, verify } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { createSandbox } from './server.js'
import { type Receiver, startReceiver } from './test-receivers.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close()
})

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'payhooks-sandbox-state-'))
  cleanup.push(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function receiver(): Promise<Receiver> {
  const started = await startReceiver()
  cleanup.push(() => started.close())
  return started
}

describe('sandbox statePath', () => {
  it('keeps subscriptions and their secrets across a restart, in a file only its owner reads', async () => {
    const dir = await folder()
    const statePath = join(dir, 'state.json')
    const target = await receiver()
    const first = createSandbox({ clock: 'manual', statePath })
    const reseller = first.subscribe({ url: target.url, eventTypes: ['transaction_settled'] })
    const merchant = first.subscribe({ url: target.url, eventTypes: ['transaction_returned'], merchantId: 5678 })
    const { url } = await first.listen()
    const created = await fetch(`${url}/ps/webhook/subscription`, {
      method: 'POST',
      headers: { authorization: 'basic merchant1234:sandbox-merchant-key-1234', 'content-type': 'application/json' },
      body: JSON.stringify({ url: target.url, event_types: ['payment_created'], is_active: false }),
    })
    expect(created.status).toBe(200)
    const before = first.subscriptions()
    expect(before).toHaveLength(3)
    await first.close()
    expect((await stat(statePath)).mode & 0o777).toBe(0o600)
    expect(await readdir(dir)).toEqual(['state.json']) // no temporary file left behind

    const second = createSandbox({ clock: 'manual', statePath })
    cleanup.push(() => second.close())
    expect(second.subscriptions()).toEqual(before)
    // The same secret signs after the restart, and each subscription keeps its scope.
    await second.emit('transaction_settled', undefined, { merchantId: 1234 })
    await second.emit('transaction_returned', undefined, { merchantId: 5678 })
    await second.emit('transaction_returned', undefined, { merchantId: 1234 })
    expect(target.requests).toHaveLength(2)
    const [settled, returned] = target.requests
    expect(
      await verify(reseller.signature_secret, settled?.body as Buffer, settled?.headers[SIGNATURE_HEADER] as string),
    ).toBe(true)
    expect(
      await verify(merchant.signature_secret, returned?.body as Buffer, returned?.headers[SIGNATURE_HEADER] as string),
    ).toBe(true)

    // Changes are written as they happen: a delete is gone after the next restart.
    const { url: secondUrl } = await second.listen()
    const deleted = await fetch(`${secondUrl}/ps/webhook/subscription/${merchant.id}`, {
      method: 'DELETE',
      headers: { authorization: 'basic merchant5678:sandbox-merchant-key-5678' },
    })
    expect(deleted.status).toBe(204)
    const kept = JSON.parse(await readFile(statePath, 'utf8')) as { subscriptions: { id: string }[] }
    expect(kept.subscriptions.map((s) => s.id)).toEqual([reseller.id, before[2]?.id])
  })

  it('starts empty without the file, and refuses a file that is not its state', async () => {
    const dir = await folder()
    const statePath = join(dir, 'new.json')
    const fresh = createSandbox({ statePath })
    cleanup.push(() => fresh.close())
    expect(fresh.subscriptions()).toEqual([])
    expect(JSON.parse(await readFile(statePath, 'utf8'))).toEqual({ version: 1, subscriptions: [] })

    const other = join(dir, 'package.json')
    await writeFile(other, '{"name":"shop"}')
    expect(() => createSandbox({ statePath: other })).toThrow(
      `createSandbox: statePath ${other} is not a sandbox state file (version undefined, expected 1); move it away to start afresh`,
    )
    expect(() => createSandbox({ statePath: join(dir, 'missing-folder', 'state.json') })).toThrow(
      /^createSandbox: cannot write statePath .* \(ENOENT\)$/,
    )
  })

  it('takes a pinned secret for a subscription', async () => {
    const sandbox = createSandbox()
    cleanup.push(() => sandbox.close())
    const pinned = sandbox.subscribe({
      url: 'http://127.0.0.1:3000/webhooks',
      eventTypes: ['transaction_settled'],
      signatureSecret: 'whsec_pinned_for_my_receiver',
    })
    expect(pinned.signature_secret).toBe('whsec_pinned_for_my_receiver')
    expect(() =>
      sandbox.subscribe({
        url: 'http://127.0.0.1:3000/webhooks',
        eventTypes: ['transaction_settled'],
        signatureSecret: 'short',
      }),
    ).toThrow('subscribe: signatureSecret must be at least 16 characters, no whitespace')
  })

  it('refuses a second sandbox on the same file while the first runs, in this process or another', async () => {
    const dir = await folder()
    const statePath = join(dir, 'state.json')
    const first = createSandbox({ statePath })
    const kept = first.subscribe({ url: 'http://127.0.0.1:3000/webhooks', eventTypes: ['transaction_settled'] })

    expect(() => createSandbox({ statePath })).toThrow(
      `createSandbox: statePath ${statePath} is in use by another sandbox (pid ${process.pid} on `,
    )
    await first.close()
    expect(await readdir(dir)).toEqual(['state.json'])

    // Another process holds it: refused while that process runs; killed (no exit handler ran), its lock is stale.
    const script = `import { createSandbox } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)}
createSandbox({ statePath: ${JSON.stringify(statePath)} }); console.log('ready'); setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    cleanup.push(async () => void child.kill('SIGKILL'))
    await once(child.stdout, 'data')
    expect(() => createSandbox({ statePath })).toThrow(`is in use by another sandbox (pid ${child.pid} on `)
    child.kill('SIGKILL')
    await once(child, 'exit')

    const second = createSandbox({ statePath })
    cleanup.push(() => second.close())
    expect(second.subscriptions()).toEqual([kept])
    const lock = JSON.parse(await readFile(`${statePath}.lock`, 'utf8')) as { pid: number }
    expect(lock.pid).toBe(process.pid)
  })
})
