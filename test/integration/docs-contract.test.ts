// The documentation site ships the service's spec (docs/contract.md), so its link works in a clone: the same text as
// the spec beside the repository (../shared/spec/, where CI has it), below the page's front matter.
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'

const root = resolve(import.meta.dirname, '../..')
const spec = resolve(root, '../shared/spec/payment-service-webhooks.md')
const page = readFileSync(resolve(root, 'docs/contract.md'), 'utf8')
const FRONT_MATTER = /^---\n[\s\S]*?\n---\n\n/

describe('docs/contract.md', () => {
  it('is the spec under a front matter, word for word (when ../shared/spec is there)', () => {
    expect(page).toMatch(FRONT_MATTER)
    const body = page.replace(FRONT_MATTER, '')
    expect(body).toMatch(/^# Payment Service: Authorization and Webhooks Specification\n/)
    expect(body).toContain('### 6.2 Verification')
    if (existsSync(spec)) expect(body).toBe(readFileSync(spec, 'utf8'))
  })
})
