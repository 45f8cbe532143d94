import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createTableSql } from './sql.js'
import { postgresStore } from './store.js'

// No server needed: option checks happen at construction (the store's behaviour is tested on a real PostgreSQL
// in test/integration).
const HOUR = 60 * 60 * 1000
const pool = new pg.Pool()

describe('postgresStore options', () => {
  it('accepts a table name, optionally schema-qualified, and refuses anything that would need quoting', () => {
    expect(() => postgresStore(pool, { table: 'webhook_events' })).not.toThrow()
    expect(() => postgresStore(pool, { table: 'billing.webhook_events' })).not.toThrow()
    for (const table of ['', 'events; DROP TABLE users', 'a.b.c', '1events', 'my-events', '"events"', 'x'.repeat(64)]) {
      expect(() => postgresStore(pool, { table })).toThrow(
        new TypeError('postgresStore: table must be a table name, optionally schema-qualified (letters, digits, _)'),
      )
    }
  })

  it('refuses a done-marker retention shorter than the 72-hour retry window', () => {
    expect(() => postgresStore(pool, { retentionMs: 72 * HOUR - 1 })).toThrow(RangeError)
    expect(() => postgresStore(pool, { retentionMs: 72.5 * HOUR + 0.5 })).toThrow(RangeError)
    expect(() => postgresStore(pool, { retentionMs: 72 * HOUR })).not.toThrow()
  })

  it('refuses a negative sweep interval; 0 turns sweeping off', () => {
    expect(() => postgresStore(pool, { sweepIntervalMs: -1 })).toThrow(
      new RangeError('postgresStore: sweepIntervalMs must be >= 0'),
    )
    expect(() => postgresStore(pool, { sweepIntervalMs: 0 })).not.toThrow()
  })

  it('warns once per pool at start when the pool has no connectionTimeoutMillis, and not when it has one', () => {
    const warnings: string[] = []
    const logger = { warn: (message: string) => void warnings.push(message), error: () => {} }
    const shared = new pg.Pool({ max: 5 })
    postgresStore(shared, { logger })
    postgresStore(shared, { logger, table: 'other_events' })
    postgresStore(new pg.Pool({ connectionTimeoutMillis: 2000 }), { logger })

    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('the pool has no connectionTimeoutMillis')
    expect(warnings[0]).toContain('connectionTimeoutMillis: 2000')
  })

  it('refuses a non-positive lease before sending anything', async () => {
    await expect(postgresStore(pool).claim('evt_1', 0)).rejects.toThrow(
      new RangeError('postgresStore: leaseMs must be positive'),
    )
  })
})

describe('createTableSql', () => {
  it('creates the table under a checked name, quoted', () => {
    expect(createTableSql('billing.webhook_events')).toMatch(
      /^CREATE TABLE IF NOT EXISTS "billing"\."webhook_events" \(/,
    )
    expect(() => createTableSql('events"; DROP TABLE users; --')).toThrow(TypeError)
  })
})
