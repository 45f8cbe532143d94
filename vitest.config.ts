import { resolve } from 'node:path'
import { defineConfig } from 'vitest/config'

const root = import.meta.dirname

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources; child processes (CLI, examples) use the built dist.
    alias: [
      { find: /^@payhooks\/([a-z]+)$/, replacement: resolve(root, 'packages/$1/src/index.ts') },
      { find: /^@payhooks\/([a-z]+)\/([a-z-]+)$/, replacement: resolve(root, 'packages/$1/src/$2.ts') },
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Console output of passing tests (start-up warnings of receivers made without a logger, and so on) is
    // noise in a green run; a failing test's output is still printed with it.
    silent: 'passed-only',
    typecheck: {
      enabled: true,
      include: ['packages/*/src/**/*.test-d.ts', 'test/**/*.test-d.ts'],
      tsconfig: './tsconfig.test.json',
    },
  },
})
