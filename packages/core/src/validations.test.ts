import { describe, expect, it } from 'vitest'
import { memoryStore } from './memory/store.js'
import { inProcessQueue } from './queue/queue.js'
import { createWebhooks } from './receiver/create.js'
import {
  check,
  inRange,
  nonEmptyString,
  nonNegativeInteger,
  nonNegativeNumber,
  positiveInteger,
  positiveNumber,
} from './validations.js'

const thrown = (fn: () => unknown) => {
  try {
    fn()
  } catch (error) {
    return [(error as Error).constructor, (error as Error).message]
  }
  return undefined
}

describe('validation helpers', () => {
  it('positiveInteger takes safe integers from 1', () => {
    expect(positiveInteger(1, 'f', 'n')).toBe(1)
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
      expect(thrown(() => positiveInteger(bad, 'f', 'n'))).toEqual([RangeError, 'f: n must be a positive integer'])
    }
  })

  it('nonNegativeInteger takes safe integers from 0', () => {
    expect(nonNegativeInteger(0, 'f', 'n')).toBe(0)
    for (const bad of [-1, 0.5, Number.NaN]) {
      expect(thrown(() => nonNegativeInteger(bad, 'f', 'n'))).toEqual([RangeError, 'f: n must be >= 0'])
    }
  })

  it('positiveNumber takes finite numbers above 0', () => {
    expect(positiveNumber(0.5, 'f', 'n')).toBe(0.5)
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(thrown(() => positiveNumber(bad, 'f', 'n'))).toEqual([RangeError, 'f: n must be a positive number'])
    }
  })

  it('nonNegativeNumber takes finite numbers from 0', () => {
    expect(nonNegativeNumber(0, 'f', 'n')).toBe(0)
    for (const bad of [-0.1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(thrown(() => nonNegativeNumber(bad, 'f', 'n'))).toEqual([RangeError, 'f: n must be >= 0'])
    }
  })

  it('inRange spells out its bounds and the reason', () => {
    expect(inRange(5, 'f', 'n', { above: 0, below: 10 })).toBe(5)
    expect(inRange(10, 'f', 'n', { min: 10, max: 10 })).toBe(10)
    expect(thrown(() => inRange(10, 'f', 'n', { above: 0, below: 10 }, 'why'))).toEqual([
      RangeError,
      'f: n must be above 0 and below 10 (why)',
    ])
    expect(thrown(() => inRange(11, 'f', 'n', { min: 1, max: 10 }))).toEqual([
      RangeError,
      'f: n must be at least 1 and at most 10',
    ])
    expect(thrown(() => inRange(Number.NaN, 'f', 'n', { min: 1 }))).toEqual([RangeError, 'f: n must be at least 1'])
  })

  it('nonEmptyString and check throw TypeError when asked to', () => {
    expect(nonEmptyString('a', 'f', 'n')).toBe('a')
    expect(thrown(() => nonEmptyString('', 'f', 'n'))).toEqual([TypeError, 'f: n must be a non-empty string'])
    expect(thrown(() => nonEmptyString(1, 'f', 'n'))).toEqual([TypeError, 'f: n must be a non-empty string'])
    expect(thrown(() => check(false, 'f', 'n', 'be a string', TypeError))).toEqual([TypeError, 'f: n must be a string'])
    expect(thrown(() => check(true, 'f', 'n', 'be a string'))).toBeUndefined()
  })
})

describe('the factories refuse bad options with their messages', () => {
  it.each<[string, () => unknown, unknown, string]>([
    [
      'createWebhooks deadlineMs',
      () => createWebhooks({ secret: 's', deadlineMs: 10_000 }),
      RangeError,
      'createWebhooks: deadlineMs must be above 0 and below 10000 (the service waits 10 s)',
    ],
    [
      'createWebhooks maxBodyBytes',
      () => createWebhooks({ secret: 's', maxBodyBytes: 0 }),
      RangeError,
      'createWebhooks: maxBodyBytes must be positive',
    ],
    [
      'createWebhooks leaseMs',
      () => createWebhooks({ secret: 's', leaseMs: 5000 }),
      RangeError,
      'createWebhooks: leaseMs must be longer than deadlineMs',
    ],
    [
      'createWebhooks secret',
      () => createWebhooks({ secret: [''] }),
      TypeError,
      'createWebhooks: secret must be a non-empty string, a list of them (or of { secret, label }), or a function',
    ],
    [
      'memoryStore retentionMs',
      () => memoryStore({ retentionMs: 1000 }),
      RangeError,
      'memoryStore: retentionMs must cover the 72-hour retry window',
    ],
    [
      'memoryStore maxEntries',
      () => memoryStore({ maxEntries: 0 }),
      RangeError,
      'memoryStore: maxEntries must be at least 1',
    ],
    [
      'inProcessQueue concurrency',
      () => inProcessQueue({ concurrency: 1.5 }),
      RangeError,
      'inProcessQueue: concurrency must be a positive integer',
    ],
    [
      'inProcessQueue retries',
      () => inProcessQueue({ retries: -1 }),
      RangeError,
      'inProcessQueue: retries must be >= 0',
    ],
    [
      'inProcessQueue backoffMs',
      () => inProcessQueue({ backoffMs: Number.NaN }),
      RangeError,
      'inProcessQueue: backoffMs must be >= 0',
    ],
    [
      'inProcessQueue maxPending',
      () => inProcessQueue({ maxPending: 0 }),
      RangeError,
      'inProcessQueue: maxPending must be a positive integer',
    ],
  ])('%s', (_name, make, errorClass, message) => {
    expect(thrown(make)).toEqual([errorClass, message])
  })
})
