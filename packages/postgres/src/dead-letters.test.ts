import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createDeadLetterTableSql } from './dead-letter-sql.js'
import { postgresDeadLetterStore } from './dead-letters.js'

// No server needed: option checks happen at construction (the store's behaviour is tested on a real PostgreSQL
// in test/integration/postgres-dead-letters.test.ts).
const pool = new pg.Pool()

describe('postgresDeadLetterStore options', () => {
  it('accepts a table name, optionally schema-qualified, and refuses anything that would need quoting', () => {
    expect(() => postgresDeadLetterStore(pool, { table: 'webhook_dead_letters' })).not.toThrow()
    expect(() => postgresDeadLetterStore(pool, { table: 'billing.dead_letters' })).not.toThrow()
    for (const table of ['', 'letters; DROP TABLE users', 'a.b.c', '1letters', 'my-letters', 'x'.repeat(64)]) {
      expect(() => postgresDeadLetterStore(pool, { table })).toThrow(
        new TypeError(
          'postgresDeadLetterStore: table must be a table name, optionally schema-qualified (letters, digits, _)',
        ),
      )
    }
  })

  it('refuses a replayed-letter retention that is not a positive whole number', () => {
    for (const replayedRetentionMs of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => postgresDeadLetterStore(pool, { replayedRetentionMs })).toThrow(
        new RangeError('postgresDeadLetterStore: replayedRetentionMs must be a positive whole number'),
      )
    }
    expect(() => postgresDeadLetterStore(pool, { replayedRetentionMs: 1 })).not.toThrow()
  })

  it('refuses a negative sweep interval; 0 turns sweeping off', () => {
    expect(() => postgresDeadLetterStore(pool, { sweepIntervalMs: -1 })).toThrow(
      new RangeError('postgresDeadLetterStore: sweepIntervalMs must be >= 0'),
    )
    expect(() => postgresDeadLetterStore(pool, { sweepIntervalMs: 0 })).not.toThrow()
  })

  it('is durable, so a receiver answers 200 once an event is parked', () => {
    expect(postgresDeadLetterStore(pool).durable).toBe(true)
  })
})

describe('createDeadLetterTableSql', () => {
  it('creates the table and its list index under a checked name, quoted', () => {
    const sql = createDeadLetterTableSql('billing.dead_letters')
    expect(sql).toMatch(/^CREATE TABLE IF NOT EXISTS "billing"\."dead_letters" \(/)
    expect(sql).toContain(
      'CREATE INDEX IF NOT EXISTS "dead_letters_list_idx" ON "billing"."dead_letters" (status, parked_at DESC, event_id DESC)',
    )
    expect(() => createDeadLetterTableSql('letters"; DROP TABLE users; --')).toThrow(TypeError)
  })

  it('keeps the index name within 63 bytes, distinct for long table names sharing their start', () => {
    const name = (table: string) => /CREATE INDEX IF NOT EXISTS "([^"]+)"/.exec(createDeadLetterTableSql(table))?.[1]
    const first = name(`${'x'.repeat(60)}_a`) as string
    const second = name(`${'x'.repeat(60)}_b`) as string
    expect(first.length).toBeLessThanOrEqual(63)
    expect(second.length).toBeLessThanOrEqual(63)
    expect(first).not.toBe(second)
    expect(first).toMatch(/_list_idx$/)
  })
})
