// The packages as another app gets them: packed (pnpm pack:all), installed with plain npm from the README's own
// command into a fresh project outside the repository, then each app under apps/ built and run on Node.
// PAYHOOKS_CONSUMER_PACKS=<folder> runs the apps against tarballs already packed there instead.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packAll } from '../../scripts/pack-all.mjs'
import { type AppName, buildAndRun, installApps } from './consumer-apps.js'

const received = { statuses: [200, 200, 401], seen: ['transaction_settled number'] }

const expected: Record<AppName, unknown> = {
  'esm-express': { ...received, build: '@payhooks/core/dist/index.js' },
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
