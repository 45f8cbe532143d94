// Core on Bun, Deno and Cloudflare Workers, against its built output (packages/core/dist): the scenario in
// test/runtimes/scenario.ts runs inside each runtime (Bun and Deno as child processes, workerd through
// Miniflare on an esbuild bundle), and each runtime's example serves signed deliveries sent from here.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { sign } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { build } from 'esbuild'
import { Miniflare } from 'miniflare'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { BODY, EVENT_ID, type RuntimeReport, SECRET } from './scenario.js'

const root = resolve(import.meta.dirname, '../..')
// The binaries the bun and deno packages' postinstall put in place, not the node_modules/.bin wrappers,
// which would leave the runtime running when the wrapper is killed.
const packageDir = (name: string) => dirname(createRequire(import.meta.url).resolve(`${name}/package.json`))
const bun = resolve(packageDir('bun'), 'bin/bun.exe')
const deno = resolve(packageDir('deno'), 'deno')
// No update checks, prompts, crash reports or colours from the runtimes.
const env = { ...process.env, DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1', DO_NOT_TRACK: '1', NO_COLOR: '1' }
const coreDist = pathToFileURL(resolve(root, 'packages/core/dist/index.js')).href
const exampleSecret = 'whsec_runtime_example'

/** What every runtime must report: verified, handled once by the typed handler, deduped, tampering refused. */
async function expectScenario(report: RuntimeReport, runtime: RegExp) {
  expect(report.runtime).toMatch(runtime)
  expect(report.signature).toBe(await sign(SECRET, BODY)) // the same digest as Node's node:crypto
  expect(report.valid).toEqual({ status: 200, body: `{"ok":true,"event_id":"${EVENT_ID}","status":"processed"}` })
  expect(report.duplicate).toEqual({ status: 200, body: `{"ok":true,"event_id":"${EVENT_ID}","status":"duplicate"}` })
  expect(report.tampered.status).toBe(401)
  expect(JSON.parse(report.tampered.body)).toMatchObject({ error: 'invalid_signature' })
  expect(report.conflict).toEqual(report.duplicate)
  expect(report.handled).toEqual([{ eventId: EVENT_ID, transactionId: 'txn_runtime_1', amount: 10.3 }])
  expect(report.errors).toEqual(['401 invalid_signature', '200 event_conflict'])
}

/** Posts to a running example and returns the status and parsed answer. */
async function post(url: string, body: string, headers: Record<string, string>) {
  const response = await fetch(url, { method: 'POST', body, headers })
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/**
 * The examples' contract, whatever serves them: each sample event's typed handler prints one line, a
 * duplicate answers 200 "duplicate" without printing again, a tampered body gets 401, other paths 404.
 */
async function expectExample(url: string, lines: string[]) {
  // The example's output comes through a pipe from another process: a loaded machine may take past vi.waitFor's 1 s.
  const printed = { timeout: 10_000, interval: 20 }
  const settled = sampleEvent('transaction_settled')
  const delivery = await signedDelivery(settled, exampleSecret)
  const handledLines = () => lines.filter((line) => line.includes(`${settled.event_id}`))

  expect(await post(url, delivery.body, delivery.headers)).toEqual({
    status: 200,
    body: { ok: true, event_id: settled.event_id, status: 'processed' },
  })
  await vi.waitFor(() => expect(handledLines()).toHaveLength(1), printed)
  expect(handledLines()[0]).toMatch(/settled 10\.3/)

  expect(await post(url, delivery.body, delivery.headers)).toEqual({
    status: 200,
    body: { ok: true, event_id: settled.event_id, status: 'duplicate' },
  })
  const tampered = delivery.body.replace('"settlement_amount":10.3', '"settlement_amount":1030')
  expect(tampered).not.toBe(delivery.body)
  expect((await post(url, tampered, delivery.headers)).status).toBe(401)
  // Output is ordered: once the rejection is printed, a second run of the handler would have been too.
  await vi.waitFor(() => expect(lines.join('\n')).toContain('rejected (401 invalid_signature)'), printed)
  expect(handledLines()).toHaveLength(1)

  const returned = sampleEvent('transaction_returned')
  const second = await signedDelivery(returned, exampleSecret)
  expect((await post(url, second.body, second.headers)).status).toBe(200)
  await vi.waitFor(() => expect(lines.join('\n')).toContain(`${returned.event_id}`), printed)

  expect((await fetch(url.replace('/webhooks', '/elsewhere'))).status).toBe(404)
  expect((await fetch(url)).status).toBe(405)
}

const runtimes = [
  {
    name: 'Bun',
    agent: /^Bun\//,
    scenario: [bun, 'test/runtimes/scenario.ts'],
    example: [bun, 'examples/bun/server.ts'],
  },
  {
    name: 'Deno',
    agent: /^Deno\//,
    // No permissions: core needs none. The example needs only loopback and its three settings.
    scenario: [deno, 'run', '--no-prompt', 'test/runtimes/scenario.ts'],
    example: [
      deno,
      'run',
      '--no-prompt',
      '--allow-net=127.0.0.1',
      '--allow-env=PORT,HOST,WEBHOOK_SECRET',
      'examples/deno/main.ts',
    ],
  },
]

const children: ChildProcess[] = []
afterEach(() => {
  for (const child of children.splice(0)) child.kill()
})

describe.each(runtimes)('$name', ({ agent, scenario, example }) => {
  it("runs core's handle(): signs, verifies, runs the typed handler once, dedupes, refuses a tampered body", async () => {
    const [command, ...args] = scenario as [string, ...string[]]
    const { stdout } = await promisify(execFile)(command, args, { cwd: root, env })
    const report = JSON.parse(stdout) as RuntimeReport & { core: string }
    await expectScenario(report, agent)
    expect(report.core).toBe(coreDist)
  })

  it('serves the example: handled once, duplicate without a second run, tampered 401', async () => {
    const [command, ...args] = example as [string, ...string[]]
    const child = spawn(command, args, {
      cwd: root,
      env: { ...env, PORT: '0', HOST: '127.0.0.1', WEBHOOK_SECRET: exampleSecret },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.push(child)
    const lines: string[] = []
    let pending = ''
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      const parts = (pending + chunk).split('\n')
      pending = parts.pop() ?? ''
      lines.push(...parts)
    })
    const exited = new Promise<never>((_, reject) =>
      child.on('exit', (code) => reject(new Error(`${command} exited with ${code}: ${lines.join('\n')}`))),
    )
    const listening = vi.waitFor(
      () => {
        const url = lines.map((line) => /^listening on (http:\/\/\S+\/webhooks)$/.exec(line)?.[1]).find(Boolean)
        if (!url) throw new Error('not listening yet')
        return url
      },
      { timeout: 20_000, interval: 20 },
    )
    const url = await Promise.race([listening, exited])
    await expectExample(url, lines)
  })
})

/** Bundles a Worker the way wrangler does (esbuild, ESM, the workerd/worker/browser export conditions). */
async function bundleWorker(entry: string) {
  const result = await build({
    entryPoints: [resolve(root, entry)],
    absWorkingDir: root,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    target: 'es2022',
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const output = result.outputFiles[0]!.text
  return {
    code: output,
    inputs: Object.keys(result.metafile.inputs),
    imports: Object.values(result.metafile.outputs).flatMap((out) => out.imports.map((i) => i.path)),
  }
}

describe('Cloudflare Workers (workerd through Miniflare, no nodejs_compat)', () => {
  const wrangler = readFileSync(resolve(root, 'examples/workers/wrangler.toml'), 'utf8')
  const compatibilityDate = /^compatibility_date\s*=\s*"([^"]+)"/m.exec(wrangler)?.[1]
  const compatibilityFlags = [
    ...(/^compatibility_flags\s*=\s*\[([^\]]*)\]/m.exec(wrangler)?.[1]?.matchAll(/"([^"]+)"/g) ?? []),
  ].map((match) => match[1] as string)
  let bundles: { scenario: Awaited<ReturnType<typeof bundleWorker>>; example: Awaited<ReturnType<typeof bundleWorker>> }
  let mf: Miniflare
  const logs: string[] = []

  beforeAll(async () => {
    const [scenario, example] = await Promise.all([
      bundleWorker('test/runtimes/worker.ts'),
      bundleWorker('examples/workers/src/index.ts'),
    ])
    bundles = { scenario, example }
    mf = new Miniflare({
      handleStructuredLogs: ({ message }: { message: string }) => {
        logs.push(message)
      },
      workers: [
        {
          name: 'example',
          modules: true,
          script: example.code,
          compatibilityDate,
          compatibilityFlags,
          bindings: { WEBHOOK_SECRET: exampleSecret },
        },
        { name: 'scenario', modules: true, script: scenario.code, compatibilityDate, compatibilityFlags },
      ],
    })
    await mf.ready
  })
  afterAll(async () => {
    await mf?.dispose()
  })

  it('bundles core from dist with no node: module, for a wrangler.toml without nodejs_compat', () => {
    expect(compatibilityDate).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(compatibilityFlags.filter((flag) => flag.startsWith('nodejs_compat'))).toEqual([])
    for (const bundle of [bundles.scenario, bundles.example]) {
      expect(bundle.inputs).toContain('packages/core/dist/index.js')
      expect(bundle.inputs.filter((input) => input.includes('packages/core/src'))).toEqual([])
      expect(bundle.imports.filter((path) => path.startsWith('node:'))).toEqual([])
      expect(bundle.code).not.toMatch(/(?:\bfrom|\bimport|\brequire)\s*\(?\s*["']node:/)
    }
  })

  it("runs core's handle() on Web Crypto: no process global, crypto.subtle signs and verifies", async () => {
    const worker = await mf.getWorker('scenario')
    const report = (await (await worker.fetch('http://localhost/webhooks')).json()) as RuntimeReport
    await expectScenario(report, /^Cloudflare-Workers$/)
    expect(report.hasProcess).toBe(false)
    expect(report.subtleSigns).toBeGreaterThan(0)
  })

  it('serves the example worker: handled once, duplicate without a second run, tampered 401', async () => {
    const url = (await mf.ready).href.replace(/\/$/, '/webhooks')
    await expectExample(url, logs)
  })
})
