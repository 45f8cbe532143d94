import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { CliIo } from './context.js'
import { run } from './run.js'
import { BYTES, estimate, GENERATION_LIFE, gigabytes, REDIS_MEASURED, sizingTable } from './sizing.js'

async function cli(args: string[]) {
  const stdout: string[] = []
  const stderr: string[] = []
  const io: CliIo = {
    stdin: [],
    stdout: { write: (text: string) => stdout.push(text) },
    stderr: { write: (text: string) => stderr.push(text) },
    env: {},
  }
  const code = await run(args, io)
  return { code, stdout: stdout.join(''), stderr: stderr.join('') }
}

describe('sizing', () => {
  it('multiplies the rate, the retentions and the bench figures', () => {
    const redis = estimate({ store: 'redis', rate: 50, ordered: true, journal: true })
    expect(redis.markers).toBe(50 * 73 * 3600 * BYTES.redis.ordered)
    expect(redis.journal).toBe(50 * 7 * 86_400 * BYTES.redis.journalAnswer)
    expect(redis.total).toBe(redis.markers + redis.journal)
    const postgres = estimate({
      store: 'postgres',
      rate: 10,
      ordered: false,
      journal: true,
      retentionHours: 100,
      journalDays: 3,
      answersPerEvent: 2,
    })
    expect(postgres.markers).toBe(10 * 100 * 3600 * BYTES.postgres.unordered)
    expect(postgres.journal).toBe(10 * 2 * 3 * 86_400 * BYTES.postgres.journalAnswer)
    expect(estimate({ store: 'redis', rate: 1, ordered: false, journal: false }).journal).toBe(0)
    expect([gigabytes(12_345_000_000), gigabytes(3_456_000_000), gigabytes(46_000_000)]).toEqual([
      '12 GB',
      '3.5 GB',
      '0.05 GB',
    ])
  })

  it("takes Redis's figures of layout 2 (issue 49), as the stores guide and the capacity page give them", () => {
    // bench/README's redis-storage row: 41 B unordered, 124 B ordered while a generation lives, 1.125 times over time.
    expect(REDIS_MEASURED).toEqual({ unordered: 41, ordered: 124 })
    expect(GENERATION_LIFE).toBe(1.125)
    expect(BYTES.redis).toMatchObject({ unordered: 46, ordered: 140, journalAnswer: 118 })
    const guide = (name: string) =>
      readFileSync(new URL(`../../../docs/guide/${name}`, import.meta.url), 'utf8').replace(/\s+/g, ' ')
    const stores = guide('stores.md')
    expect(stores).toContain(`| unordered, handled | ${REDIS_MEASURED.unordered} B |`)
    expect(stores).toContain(`| ordered, handled, one event per ordering key | ${REDIS_MEASURED.ordered} B |`)
    expect(stores).toContain(`${BYTES.redis.unordered} B unordered, ${BYTES.redis.ordered} B ordered with a key each`)
    const capacity = guide('capacity.md')
    expect(capacity).toContain(`${REDIS_MEASURED.unordered} B unordered, ${REDIS_MEASURED.ordered} B ordered`)
    expect(capacity).toContain(`${BYTES.redis.unordered} B and ${BYTES.redis.ordered} B over time`)
    expect(guide('journal.md')).toContain(`Redis memory: ${BYTES.redis.journalAnswer} bytes per answer`)
  })

  it("is the capacity page's table, figure for figure", () => {
    const page = readFileSync(new URL('../../../docs/guide/capacity.md', import.meta.url), 'utf8')
    const table = /<!-- sizing-table -->\n([\s\S]*?)\n<!-- \/sizing-table -->/.exec(page)?.[1]
    // Run `node scripts/sizing-table.mjs` after changing a figure of sizing.ts.
    expect(table).toBe(sizingTable())
  })

  it('payhooks size prints the same estimate as the table, per store', async () => {
    const { code, stdout } = await cli(['size', '--rate', '50', '--ordered', '--journal'])
    expect(code).toBe(0)
    const redis = estimate({ store: 'redis', rate: 50, ordered: true, journal: true })
    const postgres = estimate({ store: 'postgres', rate: 50, ordered: true, journal: true })
    expect(stdout).toContain('50 events/s, ordered, markers kept 73 h, journal kept 7 days (1 answer an event):')
    expect(stdout).toMatch(new RegExp(`Redis +${gigabytes(redis.total)} +markers ${gigabytes(redis.markers)} `))
    expect(stdout).toMatch(
      new RegExp(`PostgreSQL +${gigabytes(postgres.total)} +markers ${gigabytes(postgres.markers)} `),
    )
    const row = sizingTable()
      .split('\n')
      .find((line) => line.startsWith('| 50 | ordered |'))
    expect(row).toBe(
      `| 50 | ordered | ${[redis.markers, redis.total, postgres.markers, postgres.total].map(gigabytes).join(' | ')} |`,
    )
  })

  it('payhooks size takes one store, other retentions, and --json', async () => {
    const { code, stdout } = await cli([
      'size',
      '--rate',
      '200',
      '--store',
      'redis',
      '--retention-hours',
      '96',
      '--journal',
      '--journal-days',
      '3',
      '--json',
    ])
    expect(code).toBe(0)
    const printed = JSON.parse(stdout)
    const expected = estimate({
      store: 'redis',
      rate: 200,
      ordered: false,
      journal: true,
      retentionHours: 96,
      journalDays: 3,
    })
    expect(printed.estimates).toEqual([{ ...expected, source: BYTES.redis.source }])
    expect((await cli(['size', '--rate', '5', '--store', 'postgres'])).stdout).not.toContain('Redis')
  })

  it('payhooks size refuses a missing or bad value with a usage error', async () => {
    for (const args of [
      ['size'],
      ['size', '--rate', '0'],
      ['size', '--rate', 'fast'],
      ['size', '--rate', '5', '--store', 'mysql'],
      ['size', '--rate', '5', '--journal-days', '-1'],
    ]) {
      const { code, stderr } = await cli(args)
      expect(code).toBe(2)
      expect(stderr.trim().split('\n')[0]).toMatch(/^payhooks size: /)
    }
  })
})
