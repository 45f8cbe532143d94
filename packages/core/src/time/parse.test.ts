import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { parseCreatedAt, parseUtcTimestamp } from './parse.js'

describe('parseUtcTimestamp', () => {
  it('agrees with Date.parse on the forms it reads', () => {
    for (const text of [
      '2026-11-23T07:38:38Z',
      '2026-11-23T07:38:38.269Z',
      '2026-11-23T07:38:38.2Z',
      '2026-11-23T07:38:38.26Z',
      '2026-11-23T07:38:38.269999999Z',
      '1970-01-01T00:00:00Z',
      '2099-12-28T23:59:59.999Z',
    ]) {
      expect(parseUtcTimestamp(text), text).toBe(Date.parse(text))
    }
  })

  it('leaves every other form to Date.parse', () => {
    for (const text of [
      '2026-11-23T07:38:38',
      '2026-11-23T07:38:38+02:00',
      '2026-11-23 07:38:38Z',
      '2026-11-23T07:38:38.Z',
      '2026-11-23T07:38:38.1234567890Z',
      '2026-11-23t07:38:38z',
      '2026-13-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-01-01T24:00:00Z',
      '2026-01-01T23:59:60Z',
      '+02026-01-01T00:00:00Z',
      '2026-0a-01T00:00:00Z',
      '2026-11-23T07:38:38.2a9Z',
      '1969-12-31T23:59:59Z',
    ]) {
      expect(parseUtcTimestamp(text), text).toBeUndefined()
    }
  })

  it('matches Date.parse over random timestamps of the served form', () => {
    let seed = 42
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    const pad = (n: number, width: number) => String(n).padStart(width, '0')
    for (let i = 0; i < 5000; i++) {
      const fraction = random(4) === 0 ? '' : `.${pad(random(10 ** 9), 9).slice(0, 1 + random(9))}`
      const text = `${pad(1970 + random(200), 4)}-${pad(1 + random(12), 2)}-${pad(1 + random(28), 2)}T${pad(random(24), 2)}:${pad(random(60), 2)}:${pad(random(60), 2)}${fraction}Z`
      expect(parseUtcTimestamp(text), text).toBe(Date.parse(text))
    }
  })

  it('agrees with Date.parse across times of one day and days in turn (the day it last read is kept)', () => {
    for (const text of [
      '2026-11-23T00:00:00Z',
      '2026-11-23T23:59:59.999Z',
      '2026-11-24T00:00:00Z',
      '2026-11-23T12:00:00Z',
      '2025-11-23T12:00:00Z',
      '2026-10-23T12:00:00Z',
      '2026-11-13T12:00:00Z',
      '2026-11-13T12:00:01Z',
    ]) {
      expect(parseUtcTimestamp(text), text).toBe(Date.parse(text))
    }
  })
})

describe('parseCreatedAt', () => {
  it('reads a created_at without a zone as UTC and a zoned one by its zone, whatever the server time zone', () => {
    vi.stubEnv('TZ', 'Asia/Kolkata')
    onTestFinished(() => {
      vi.unstubAllEnvs()
    })
    expect(new Date(Date.UTC(2026, 10, 2)).getTimezoneOffset()).toBe(-330)
    const utc = Date.parse('2026-11-02T15:00:00.250Z')
    for (const text of ['2026-11-02T15:00:00.250', '2026-11-02T15:00:00.250Z', '2026-11-02T20:30:00.250+05:30']) {
      expect(parseCreatedAt(text), text).toBe(utc)
    }
    expect(parseCreatedAt('2026-11-02T15:00')).toBe(Date.parse('2026-11-02T15:00Z'))
    expect(parseCreatedAt('2026-11-02T10:00:00-0500')).toBe(Date.parse('2026-11-02T15:00:00Z'))
    expect(parseCreatedAt('2026-11-02')).toBe(Date.parse('2026-11-02T00:00:00Z'))
    expect(parseCreatedAt('yesterday')).toBeNaN()
  })

  // Zones east and west of UTC, and one with a half-hour offset, so a local reading is off in every direction.
  describe.each([
    ['Asia/Tokyo', -540],
    ['Pacific/Honolulu', 600],
    ['Asia/Kolkata', -330],
  ])('under TZ=%s', (zone, offsetMinutes) => {
    it('reads every date-time form without a zone as UTC, and every zoned one by its zone', () => {
      vi.stubEnv('TZ', zone)
      onTestFinished(() => {
        vi.unstubAllEnvs()
      })
      expect(new Date(Date.UTC(2026, 10, 2)).getTimezoneOffset()).toBe(offsetMinutes)
      const at = (iso: string) => new Date(iso).getTime()
      const table: [string, number][] = [
        ['2026-11-02 15:04:05', at('2026-11-02T15:04:05Z')],
        ['2026-11-02 15:04:05.250', at('2026-11-02T15:04:05.250Z')],
        ['2026-11-02 15:04:05.123456789', at('2026-11-02T15:04:05.123Z')],
        ['2026-11-02 15:04', at('2026-11-02T15:04:00Z')],
        ['2026-11-02T15:04:05', at('2026-11-02T15:04:05Z')],
        ['2026-11-02T15:04:05.25', at('2026-11-02T15:04:05.250Z')],
        ['2026-11-02T15:04', at('2026-11-02T15:04:00Z')],
        ['2026-11-02t15:04:05', at('2026-11-02T15:04:05Z')],
        ['2026-11-02', at('2026-11-02T00:00:00Z')],
        ['2026-11-02 15:04:05Z', at('2026-11-02T15:04:05Z')],
        ['2026-11-02T15:04:05z', at('2026-11-02T15:04:05Z')],
        ['2026-11-02 15:04:05.5Z', at('2026-11-02T15:04:05.500Z')],
        ['2026-11-02T17:04:05+02:00', at('2026-11-02T15:04:05Z')],
        ['2026-11-02 17:04:05+02:00', at('2026-11-02T15:04:05Z')],
        ['2026-11-02T10:04:05-0500', at('2026-11-02T15:04:05Z')],
        ['2026-11-02T17:04:05+02', at('2026-11-02T15:04:05Z')],
        ['2026-11-02T20:34:05.250+05:30', at('2026-11-02T15:04:05.250Z')],
        ['2026-11-02 15:04+00:00', at('2026-11-02T15:04:00Z')],
        ['+275760-09-13T00:00:00.000Z', 8.64e15],
        ['+002026-11-02 15:04:05', at('2026-11-02T15:04:05Z')],
      ]
      for (const [text, expected] of table) expect(parseCreatedAt(text), text).toBe(expected)
    })

    it('gives NaN for forms that are not ISO 8601, rather than a reading in the local zone', () => {
      vi.stubEnv('TZ', zone)
      onTestFinished(() => {
        vi.unstubAllEnvs()
      })
      for (const text of [
        'Mon, 02 Nov 2026 15:04:05',
        'Nov 2 2026 15:04',
        '2026/11/02 15:04:05',
        '0',
        'yesterday',
        '',
      ]) {
        expect(parseCreatedAt(text), text).toBeNaN()
      }
    })
  })
})
