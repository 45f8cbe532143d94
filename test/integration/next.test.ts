// examples/next, built with `next build` and served by `next start` in a child process, passes the URL
// scenario list. The build runs once per test run.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe } from 'vitest'
import { type RunningUrlTarget, urlScenarios } from '../fixtures/url-scenarios.js'

const dir = resolve(import.meta.dirname, '../../examples/next')
const nextBin = createRequire(resolve(dir, 'package.json')).resolve('next/dist/bin/next')
const secret = 'whsec_next_example_test'
// vitest sets NODE_ENV=test, which Next refuses to build a production bundle under.
const env = { ...process.env, NODE_ENV: 'production', NEXT_TELEMETRY_DISABLED: '1' }

let server: ChildProcess | undefined
let running: RunningUrlTarget | undefined

beforeAll(async () => {
  await promisify(execFile)(process.execPath, [nextBin, 'build'], { cwd: dir, env, maxBuffer: 16 * 1024 * 1024 })

  const lines: string[] = []
  // stderr joins stdout in one pipe (the shell execs node), so handler lines and error lines keep their order.
  const start = [process.execPath, nextBin, 'start', '--hostname', '127.0.0.1', '--port', '0']
  const child = spawn('sh', ['-c', 'exec "$0" "$@" 2>&1', ...start], {
    cwd: dir,
    env: { ...env, WEBHOOK_SECRET: secret, PAYHOOKS_TEST_HOOKS: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  server = child
  createInterface({ input: child.stdout }).on('line', (line) => lines.push(line))
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      const ready = lines.some((line) => line.includes('Ready'))
      const local = lines.map((line) => /Local:\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(line)?.[1]).find(Boolean)
      if (ready && local) {
        clearInterval(timer)
        resolve(local)
      }
    }, 20)
    child.once('exit', (code) => {
      clearInterval(timer)
      reject(new Error(`next start exited with ${code}:\n${lines.join('\n')}`))
    })
  })
  running = { url: `${url}/webhooks`, lines: () => lines }
}, 600_000)

afterAll(async () => {
  if (!server || server.exitCode !== null) return
  const exited = new Promise((resolve) => server?.once('exit', resolve))
  server.kill()
  await exited
})

describe('examples/next (next build, next start)', () => {
  urlScenarios(
    // A route that exports only POST: Next answers other methods 405 itself, without a body or Allow header.
    { secret, bodyLimit: 1_048_576, kitReadsBody: true, otherMethodsStatus: 405, deadlineMs: 5000 },
    () => {
      if (!running) throw new Error('next start did not come up')
      return running
    },
  )
})
