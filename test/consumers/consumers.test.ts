// The packages as another app gets them: packed (pnpm pack:all), installed with plain npm by the line
// `pnpm pack:all --for` prints (the README's command) into a fresh project outside the repository, then each app
// under apps/ built (TypeScript 5.4, 6, 7) and run on Node; the queue-mode app on the test's redis-server.
// PAYHOOKS_CONSUMER_PACKS=<folder> runs the apps against tarballs already packed there instead.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installArgs } from '../../scripts/install-line.mjs'
import { packAll } from '../../scripts/pack-all.mjs'
import { type AppName, buildAndRun, installApps, readmeNpmInstall } from './consumer-apps.js'

const received = { statuses: [200, 200, 401], seen: ['transaction_settled number'] }

const expected: Record<AppName, unknown> = {
  'esm-express': { ...received, build: '@payhooks/core/dist/index.js' },
  'esm-express-queue': {
    answers: [
      [200, 'queued'],
      [401, null],
    ],
    seen: ['transaction_settled number'],
    errors: ['invalid_signature'],
  },
  'cjs-require': {
    builds: [
      '@payhooks/core/dist/cjs/index.js',
      '@payhooks/express/dist/cjs/index.js',
      '@payhooks/core/dist/cjs/node.js',
    ],
    verified: true,
    exported: ['function', 'function'],
  },
  'ts-nest-commonjs': received,
  'ts-node16-commonjs': received,
  'ts-nodenext-esm': received,
  'ts-bundler': received,
}

describe("the README's install line", () => {
  it('is the one `pnpm pack:all --for` prints for the packages it names', () => {
    const line = readmeNpmInstall()
    const named = line.flatMap((arg) => /^\.\.\/payhooks\/packs\/payhooks-([a-z]+)\.tgz$/.exec(arg)?.[1] ?? [])
    expect(line).toEqual(installArgs(named, '../payhooks/packs'))
  })
})

describe('the packed packages, installed with npm in fresh apps', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-consumer-'))
  beforeAll(async () => {
    const packs = process.env.PAYHOOKS_CONSUMER_PACKS ?? join(dir, 'packs')
    if (!process.env.PAYHOOKS_CONSUMER_PACKS) await packAll(packs)
    const installed = await installApps(dir, packs)
    expect(installed.code, installed.output).toBe(0)
  }, 600_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it.each(Object.keys(expected) as AppName[])(
    '%s builds and receives',
    async (app) => {
      const ran = await buildAndRun(dir, app)
      expect({ step: ran.step, code: ran.code, output: ran.code === 0 ? 'ok' : ran.output }).toEqual({
        step: ran.step,
        code: 0,
        output: 'ok',
      })
      expect(JSON.parse(ran.output.trim().split('\n').at(-1) ?? '')).toEqual(expected[app])
    },
    180_000,
  )
})
