// The line `pnpm pack:all --for` prints: what a Node app following a quick start needs, and nothing from a registry
// under the @payhooks scope.
import { describe, expect, it } from 'vitest'
import { installArgs } from '../../scripts/install-line.mjs'

describe('pnpm pack:all --for', () => {
  it('names the server the Hono quick start imports on Node (@hono/node-server), pinned to a major it supports', () => {
    expect(installArgs(['hono'], 'packs')).toEqual([
      'packs/payhooks-core.tgz',
      'packs/payhooks-hono.tgz',
      '@hono/node-server@^2.1.0',
      'hono@^4.6.0',
    ])
  })
})
