import { resolve } from 'node:path'
import { defineConfig } from 'vitest/config'
import { OLDEST_MAJORS } from './scripts/test-matrix.mjs'

const root = import.meta.dirname
// The matrix's pass on the oldest supported majors (scripts/test-matrix.mjs): the sources' and tests' imports of
// ioredis, bullmq and @hono/node-server load their npm aliases (ioredis-5, ...); child processes get the same from
// scripts/oldest-majors.mjs.
const oldest =
  process.env.PAYHOOKS_OLDEST_MAJORS === '1'
    ? Object.entries(OLDEST_MAJORS).map(([name, alias]) => ({
        find: new RegExp(`^${name}(?=$|/)`),
        replacement: alias,
      }))
    : []

export default defineConfig({
  resolve: {
    // Tests run against the TypeScript sources; child processes (CLI, examples) use the built dist.
    alias: [
      { find: /^@payhooks\/([a-z]+)$/, replacement: resolve(root, 'packages/$1/src/index.ts') },
      { find: /^@payhooks\/([a-z]+)\/([a-z-]+)$/, replacement: resolve(root, 'packages/$1/src/$2.ts') },
      ...oldest,
    ],
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    // Only to stop a test that hangs: no test asserts on the machine's speed, and with two whole runs side by side
    // (load 10-15 on 2 cores) a test spawning several CLI or example processes takes 25 s that alone take 3.
    // The files of a vitest run share one worker and its loaded modules instead of a process each: a file's own
    // process cost about 1.2 s of CPU (27 small files, back to back: 44 s of CPU isolated, 12 s not), over 500 files
    // a run. No test file mocks a module; those stubbing the environment undo it.
    isolate: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
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
