import { describe, expect, it } from 'vitest'
import { fenceStatements } from './fence-sql.js'
import { statements } from './sql.js'
import { answersRows } from './statement-kind.js'

describe('answersRows: rows or a count, as prismaStore picks $queryRaw or $executeRaw', () => {
  it("reads the store's statements: claims and fences answer rows, markers, renewals and releases a count", () => {
    const sql = statements('payhooks_events', true)
    const fenced = fenceStatements('payhooks_events', 'payhooks_events_fences', true)
    expect({
      claim: answersRows(sql.claim),
      state: answersRows(sql.state),
      extend: answersRows(sql.extend),
      complete: answersRows(sql.complete),
      release: answersRows(sql.release),
      sweep: answersRows(sql.sweep),
      enter: answersRows(fenced.enter),
      holder: answersRows(fenced.holder),
      fencedExtend: answersRows(fenced.extend),
      fencedComplete: answersRows(fenced.complete),
      fencedRelease: answersRows(fenced.release),
    }).toEqual({
      claim: true,
      state: true,
      extend: false,
      complete: false,
      release: false,
      sweep: true,
      enter: true,
      holder: true,
      // A CTE's RETURNING is not the statement's: the UPDATE after it answers how many rows it changed.
      fencedExtend: false,
      fencedComplete: false,
      fencedRelease: false,
    })
  })

  it('ignores words in literals, quoted names and comments, and counts several statements', () => {
    expect(answersRows(`UPDATE t SET note = 'RETURNING' WHERE id = $1`)).toBe(false)
    expect(answersRows(`UPDATE "returning" SET a = 1 -- RETURNING a`)).toBe(false)
    expect(answersRows('/* SELECT */ DELETE FROM t')).toBe(false)
    expect(answersRows('DELETE FROM t RETURNING id')).toBe(true)
    expect(answersRows('  select 1')).toBe(true)
    expect(answersRows('CREATE TABLE t (id int); CREATE INDEX ON t (id)')).toBe(false)
    expect(answersRows('SELECT 1; SELECT 2')).toBe(false)
    expect(answersRows('SET LOCAL lock_timeout = 500')).toBe(false)
    expect(answersRows('WITH a AS MATERIALIZED (SELECT 1) SELECT * FROM a')).toBe(true)
  })
})
