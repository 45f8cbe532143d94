import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MIGRATIONS } from './migrations.js'
import { indexOf } from './schema-change.js'

// health() and migrate() read the list of migrations from MIGRATIONS, and the docs list them for people applying
// them by hand: each file of sql/ must be in all of them, or an upgrade misses one (the upgrading checklist said
// 003 to 007 while the release needed 008, 010 and 012 too, and health() checked none of 008, 009 or 012).
const files = readdirSync(new URL('../sql/', import.meta.url))
  .filter((file) => file.endsWith('.sql'))
  .sort()
const text = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8')

describe('MIGRATIONS', () => {
  it('has one entry per file of sql/, by number and file', () => {
    expect(MIGRATIONS.map((migration) => migration.file).sort()).toEqual(files)
    for (const migration of MIGRATIONS) expect(migration.file.startsWith(`${migration.number}_`)).toBe(true)
  })

  it('names, for each index a file creates, the statement health() checks and migrate() builds', () => {
    for (const migration of MIGRATIONS) {
      const created = [...text(`../sql/${migration.file}`).matchAll(/CREATE INDEX IF NOT EXISTS (\w+)/g)].map(
        (match) => match[1],
      )
      const table = {
        events: 'payhooks_events',
        dead_letters: 'payhooks_dead_letters',
        journal: 'payhooks_journal',
        pauses: 'payhooks_pauses',
      }
      const listed = (migration.indexes?.(table[migration.store]) ?? []).map((statement) => indexOf(statement).name)
      expect(listed.sort(), migration.file).toEqual(created.sort())
    }
  })
})

describe('the docs listing the migrations', () => {
  it.each([
    ['packages/postgres/README.md', '../README.md'],
    ['docs/guide/upgrading.md', '../../../docs/guide/upgrading.md'],
    ['docs/guide/stores.md', '../../../docs/guide/stores.md'],
  ])('%s names every file of sql/', (_, path) => {
    const page = text(path)
    expect(files.filter((file) => !page.includes(file))).toEqual([])
  })
})
