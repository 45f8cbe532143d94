// What a `payhooks prove` run leaves behind (issue 51): a kit receiver with a durable dead-letter store parks the
// 80-hour-old resend, a signed letter a later replay of all would run as a real settlement. With --module the run
// deletes the letters it caused; without, the report names them and --cleanup deletes every run's. The report also
// says whether --ledger's once-only check ran and passed. The built CLI in a child process, a real Redis.
import { randomUUID } from 'node:crypto'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createWebhooks } from '@payhooks/core'
import { nodeWebhooks } from '@payhooks/core/node'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listen, SECRET } from '../fixtures/apps.js'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
const MODULE = resolve(import.meta.dirname, '../fixtures/dead-letters-module.mjs')
const ROOT_PREFIX = 'payhooks-prove-letters:'

interface Report {
  run: string
  checks: { id: string; verdict: string; answers: { eventId?: string; outcome?: string }[] }[]
  summary: { fail: number }
  onceOnly: { checked: boolean; passed?: boolean; acknowledged?: number; refused?: number; problems?: string[] }
  letters: { lookedIn: string; parked: string[]; deleted: string[]; left: string[] }
}

const redis = new Redis(REDIS_URL)
const closing: (() => Promise<unknown>)[] = []
beforeAll(() => assertBuilt())
afterAll(async () => {
  await Promise.all(closing.map((close) => close()))
  const keys = await redis.keys(`${ROOT_PREFIX}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

/** A kit receiver on Redis with a durable dead-letter store, its handler runs counted and served as the ledger. */
async function receiver() {
  const prefix = `${ROOT_PREFIX}${randomUUID()}:`
  const deadLetters = redisDeadLetterStore(redis, { keyPrefix: `${prefix}{dead-letters}:`, ...UNHURRIED })
  const webhooks = createWebhooks({
    secret: SECRET,
    store: redisStore(redis, { keyPrefix: `${prefix}store:`, ...UNHURRIED }),
    deadLetters,
    checkAtStart: false,
    logger: { error() {} },
  })
  const runs = new Map<string, number>()
  webhooks.onAny((event) => {
    runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
  })
  const webhook = nodeWebhooks(webhooks)
  const app = await listen((req, res) => {
    if (req.url === '/ledger')
      res.setHeader('content-type', 'application/json').end(JSON.stringify(Object.fromEntries(runs)))
    else webhook(req, res)
  })
  closing.push(
    () => app.close(),
    () => webhooks.close(),
  )
  const env = { REDIS_URL: REDIS_URL as string, SECRET, KEY_PREFIX: prefix, COUNTS_KEY: `${prefix}counts` }
  const prove = async (...args: string[]) => {
    const result = await runCli(['prove', '--url', `${app.url}/webhooks`, '--secret', SECRET, ...args], { env })
    return { ...result, report: args.includes('--json') ? (JSON.parse(result.stdout) as Report) : undefined }
  }
  return { deadLetters, ledger: `${app.url}/ledger`, prove, env }
}

const resendId = (report: Report | undefined) =>
  report?.checks.find((check) => check.id === 'resend-80h')?.answers[0]?.eventId as string

describe('payhooks prove and the letters it causes', () => {
  it('without --module names the letter it left; --cleanup deletes every run’s, and no other letter', async () => {
    const { deadLetters, ledger, prove, env } = await receiver()
    const { code, report } = await prove('--ledger', ledger, '--json')
    expect(code).toBe(0)
    const id = resendId(report)
    expect(id).toMatch(new RegExp(`^evt_prove_${report?.run}_\\d+$`))
    expect(report?.letters).toEqual({ lookedIn: 'answers', parked: [id], deleted: [], left: [id] })
    expect((await deadLetters.get(id))?.code).toBe('stale_event')
    // The text report says so, and that the once-only check ran and passed.
    const text = await prove('--ledger', ledger)
    expect(text.stdout).toMatch(/^once-only \(--ledger\): PASS: \d+ acknowledged events each ran once, \d+ refused/m)
    expect(text.stdout).toMatch(
      /^letters: LEFT evt_prove_\w+_\d+, parked by the receiver: .*payhooks prove --cleanup --module <file>/m,
    )

    const body = new TextEncoder().encode('{}')
    const other = { eventType: 'transaction_settled', body, headers: {}, createdAt: undefined, parkedAt: new Date() }
    await deadLetters.park({ ...other, eventId: 'evt_not_prove', code: 'handler_failed', reason: 'r' })
    const cleanup = await runCli(['prove', '--cleanup', '--module', MODULE], { env })
    expect(cleanup.stderr).toBe('')
    expect(cleanup).toMatchObject({ code: 0, stdout: 'Deleted 2 dead letter(s) of prove runs (evt_prove_*).\n' })
    expect(await deadLetters.get(id)).toBeUndefined()
    expect(await deadLetters.get('evt_not_prove')).toBeDefined()
    const usage = await runCli(['prove', '--cleanup'], { env })
    expect(usage.code).toBe(2)
    expect(usage.stderr).toMatch(/--cleanup needs --module/)
  })

  it('with --module deletes the letters of its run at its end', async () => {
    const { deadLetters, prove } = await receiver()
    const { code, report, stderr } = await prove('--module', MODULE, '--json')
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const id = resendId(report)
    expect(report?.letters).toEqual({ lookedIn: 'dead-letters', parked: [id], deleted: [id], left: [] })
    expect(await deadLetters.get(id)).toBeUndefined()
    // Without --ledger the once-only check did not run, and the report says so.
    expect(report?.onceOnly).toEqual({ checked: false })
    const text = await prove('--module', MODULE)
    expect(text.stdout).toMatch(/^once-only: NOT CHECKED \(no --ledger/m)
    expect(text.stdout).toMatch(/^letters: deleted evt_prove_\w+_\d+ in the dead letters$/m)
  })

  it('a module that cannot be loaded stops the run before anything is sent (exit 2)', async () => {
    const { prove } = await receiver()
    const result = await prove('--module', '/nonexistent/module.mjs')
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(/^payhooks prove: cannot load \/nonexistent\/module\.mjs/)
    expect(result.stdout).toBe('')
  })

  it('exits 2 with one line when prove itself fails (dead letters that throw while it cleans up)', async () => {
    const file = join(await mkdtemp(join(tmpdir(), 'prove-letters-')), 'failing.mjs')
    await writeFile(
      file,
      `const fail = () => { throw new Error('store down\\n    at secret stack \\u001b[2J') }
export const deadLetters = { list: fail, get: fail, replay: fail, replayAll: fail }`,
    )
    const result = await runCli(['prove', '--cleanup', '--module', file])
    expect(result).toMatchObject({ code: 2, stdout: '', stderr: 'payhooks prove: could not finish: store down\n' })
  })
})
