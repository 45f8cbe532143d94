import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createDeadLetterTableSql, widenCodeSql, widenDeadLetterCodeSql } from './dead-letter-sql.js'
import { createFenceTableSql, fenceTokenColumnSql, heldKeysSql } from './fence-sql.js'
import { createPauseTableSql } from './pause-sql.js'
import { bodyDigestColumnSql, createTableSql } from './sql.js'

/** The statements without comments, quotes around names, or layout. */
const statements = (sql: string) =>
  sql
    .replace(/--.*$/gm, '')
    .replace(/"/g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*;\s*/g, ';')
    .replace(/;$/, '')
    .trim()

const shipped = (file: string) => readFileSync(new URL(`../sql/${file}`, import.meta.url), 'utf8')

// The migrations ship as files for migration tools, and the stores create the same tables themselves: the two
// copies must not drift apart.
describe('the shipped migrations', () => {
  it('001 creates what createTableSql writes for the default table', () => {
    expect(statements(shipped('001_payhooks_events.sql'))).toBe(statements(createTableSql('payhooks_events')))
  })

  it('004 adds what bodyDigestColumnSql writes for the default table', () => {
    expect(statements(shipped('004_payhooks_events_body_digest.sql'))).toBe(
      statements(bodyDigestColumnSql('payhooks_events')),
    )
  })

  it('005 creates what createFenceTableSql writes for the default table', () => {
    expect(statements(shipped('005_payhooks_events_fences.sql'))).toBe(
      statements(createFenceTableSql('payhooks_events')),
    )
  })

  it('006 adds what fenceTokenColumnSql writes for the default table', () => {
    expect(statements(shipped('006_payhooks_events_fence_token.sql'))).toBe(
      statements(fenceTokenColumnSql('payhooks_events')),
    )
  })

  it('007 adds what heldKeysSql writes for the default table', () => {
    expect(statements(shipped('007_payhooks_events_held_keys.sql'))).toBe(statements(heldKeysSql('payhooks_events')))
  })

  it('002 creates what createDeadLetterTableSql writes for the default table', () => {
    expect(statements(shipped('002_payhooks_dead_letters.sql'))).toBe(
      statements(createDeadLetterTableSql('payhooks_dead_letters')),
    )
  })

  it('003 widens the code check to stale_event for the default table', () => {
    expect(statements(shipped('003_payhooks_dead_letters_stale_event.sql'))).toBe(
      statements(
        widenCodeSql('payhooks_dead_letters', ['schema_mismatch', 'handler_failed', 'stale_event'], 'stale_event'),
      ),
    )
  })

  it('015 widens the code check as widenDeadLetterCodeSql writes for the default table', () => {
    expect(statements(shipped('015_payhooks_dead_letters_paused.sql'))).toBe(
      statements(widenDeadLetterCodeSql('payhooks_dead_letters')),
    )
  })

  it('016 creates what createPauseTableSql writes for the default table', () => {
    expect(statements(shipped('016_payhooks_pauses.sql'))).toBe(statements(createPauseTableSql('payhooks_pauses')))
  })
})
