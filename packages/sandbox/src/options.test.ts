import { parseArgs } from 'node:util'
import { describe, expect, it } from 'vitest'
import { resolveOptions } from './options.js'

describe('the generated control token', () => {
  it('is hex, so `--token <value>` always parses (a base64url token can start with "-")', () => {
    for (let i = 0; i < 200; i++) {
      const { controlToken } = resolveOptions({})
      expect(controlToken).toMatch(/^[0-9a-f]{40}$/)
      const { values } = parseArgs({ args: ['--token', controlToken], options: { token: { type: 'string' } } })
      expect(values.token).toBe(controlToken)
    }
  })
})
