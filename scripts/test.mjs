#!/usr/bin/env node
// Builds the packages, makes sure a real redis-server and PostgreSQL run for their tests, then runs vitest.
// REDIS_URL set: that server is used. Otherwise redis-server is started on a free loopback port and
// stopped afterwards; on a machine without it, the Debian package is installed when we are root.
// Chromium (for the dashboard test) and nginx (for the proxy tests) are installed the same way.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { mariadbBin, startMariadb } from './mariadb-server.mjs'
import { packAll } from './pack-all.mjs'
import { postgresBinDir, startPostgres } from './postgres-server.mjs'
import { generatePrismaClients } from './prisma-generate.mjs'
import { installRuntimeDeps } from './runtime-deps.mjs'
import { mainLabel, matrixPasses, passFiles, readReport, reportFile, runPass } from './test-matrix.mjs'
import { listTestFiles, runOnSlots, splitFiles } from './test-parts.mjs'
import { onExit, startRedisCluster, startRedisServer, startServices, which } from './test-services.mjs'

const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit' }).status ?? 1
/** Which of 'redis', 'cluster', 'postgres' and 'mariadb' this script started (the others were given by the environment). */
const startedHere = new Set()
// The workspace's own binaries, not npx: npx inside `pnpm test` warns about each npm_config_* variable pnpm sets.
const localBin = (name) => join(import.meta.dirname, '..', 'node_modules', '.bin', name)

if (!process.env.REDIS_URL || !process.env.REDIS_CLUSTER_NODES) {
  if (!which('redis-server') && process.getuid?.() === 0 && which('apt-get')) {
    console.log('redis-server not found: installing the Debian package redis-server')
    if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'redis-server'])
  }
  if (!which('redis-server') || !which('redis-cli')) {
    console.error(
      'redis-server and redis-cli are needed by the Redis tests (Debian: apt-get install redis-server), or set REDIS_URL and REDIS_CLUSTER_NODES',
    )
    process.exit(1)
  }
}

// The Redis Cluster test needs a real cluster: REDIS_CLUSTER_NODES (host:port,...) names one, otherwise three
// primaries are started on free loopback ports (scripts/test-services.mjs) while the build runs.
const clusterReady = process.env.REDIS_CLUSTER_NODES
  ? undefined
  : startRedisCluster().then(
      ({ nodes, stop }) => {
        startedHere.add('cluster')
        onExit(stop)
        process.env.REDIS_CLUSTER_NODES = nodes
        console.log(`Redis Cluster on ${nodes}`)
      },
      (error) => {
        console.error(error.message)
        process.exit(1)
      },
    )

// `pnpm test -- <files>` passes its '--' on; vitest would take it as the end of its options and run every file.
const files = process.argv.slice(2)
if (files[0] === '--') files.shift()

// The documentation site's test opens the built site: built by scripts/docs-build.mjs (API reference from the
// sources, then VitePress; 1-2 min), which fails on any warning of that build. It needs neither the packages' build
// nor the services, so it runs alongside them (its output is printed once it is done) and vitest waits for it.
// PAYHOOKS_DOCS_BUILT=1 (.ci/run, which runs `pnpm docs:build` beside the lint and the typecheck): built already.
const docsBuilt = process.env.PAYHOOKS_DOCS_BUILT === '1'
if (docsBuilt) console.log('docs: site built by pnpm docs:build before this run (PAYHOOKS_DOCS_BUILT)')
const docsBuild =
  !docsBuilt && (!files.length || files.some((f) => f.includes('docs-site')))
    ? new Promise((resolve) => {
        const child = spawn(process.execPath, [join(import.meta.dirname, 'docs-build.mjs')], {
          stdio: ['ignore', 'pipe', 'pipe'],
        })
        let output = ''
        child.stdout.on('data', (chunk) => {
          output += chunk
        })
        child.stderr.on('data', (chunk) => {
          output += chunk
        })
        child.on('close', (code) => resolve({ code: code ?? 1, output }))
      })
    : undefined

// The MySQL store's tests need a real server: MYSQL_URL, or a throw-away MariaDB (Debian's mariadb-server package,
// installed when missing and we are root) on a free loopback port, started while the build runs, stopped afterwards.
if (!process.env.MYSQL_URL && !mariadbBin() && process.getuid?.() === 0 && which('apt-get')) {
  console.log('MariaDB not found: installing the Debian package mariadb-server')
  if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'mariadb-server'])
}
const mariadbReady = process.env.MYSQL_URL
  ? undefined
  : startMariadb().then(
      (mariadb) => {
        startedHere.add('mariadb')
        onExit(mariadb.stop)
        process.env.MYSQL_URL = mariadb.url
        console.log(`mariadb ${mariadb.bin} on ${mariadb.url}`)
      },
      (error) => {
        console.error(
          `${error.message}\nMariaDB is needed by the MySQL tests: apt-get install mariadb-server, or set MYSQL_URL`,
        )
        process.exit(1)
      },
    )

if (run(localBin('tsc'), ['--build']) !== 0) process.exit(1)
// prismaStore's tests, type tests and bench import a client generated from test/fixtures/prisma/schema.prisma.
generatePrismaClients()

if (!process.env.REDIS_URL) {
  const redis = await startRedisServer()
  startedHere.add('redis')
  onExit(redis.stop)
  process.env.REDIS_URL = redis.url
  process.env.REDIS_SERVER_BIN = which('redis-server')
  console.log(`redis-server ${process.env.REDIS_SERVER_BIN} on ${process.env.REDIS_URL}`)
}

await clusterReady
await mariadbReady
// The PostgreSQL store's tests need a real server: DATABASE_URL, or a throw-away one (Debian's postgresql package,
// installed when missing and we are root) on a free loopback port, stopped afterwards.
if (!process.env.DATABASE_URL) {
  if (!postgresBinDir() && process.getuid?.() === 0 && which('apt-get')) {
    console.log('PostgreSQL not found: installing the Debian package postgresql')
    if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'postgresql'])
  }
  if (!postgresBinDir()) {
    console.error('PostgreSQL is needed by the Postgres tests: apt-get install postgresql, or set DATABASE_URL')
    process.exit(1)
  }
  const postgres = await startPostgres()
  startedHere.add('postgres')
  onExit(postgres.stop)
  process.env.DATABASE_URL = postgres.url
  console.log(`postgres ${postgres.binDir} on ${postgres.url}`)
}

// The sandbox dashboard test drives Debian's Chromium at /usr/bin/chromium through playwright-core.
if (!existsSync('/usr/bin/chromium') && process.getuid?.() === 0 && which('apt-get')) {
  console.log('chromium not found: installing the Debian package chromium')
  if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'chromium'])
}
if (!existsSync('/usr/bin/chromium')) {
  console.error('/usr/bin/chromium is missing, so the sandbox dashboard test will fail: apt-get install chromium')
}

// The proxy tests (test/integration/proxy-*.test.ts) start their own nginx, Debian's package, on loopback ports.
const nginxInstalled = () => ['/usr/sbin/nginx', '/usr/local/sbin/nginx'].some(existsSync) || which('nginx') !== ''
if (!nginxInstalled() && process.getuid?.() === 0 && which('apt-get')) {
  console.log('nginx not found: installing the Debian package nginx')
  if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'nginx'])
}
if (!nginxInstalled()) console.error('nginx is missing, so the proxy tests will fail: apt-get install nginx')

installRuntimeDeps()

// The JSON report gives one closing line CI can read: 'Tests: N passed, N failed, N skipped', summed over the
// main pass and the matrix's (scripts/test-matrix.mjs). `pnpm test -- <files>` runs the main pass alone on those
// files; PAYHOOKS_TEST_MATRIX=1 adds the matrix's passes on those of them each pass covers.
const report = reportFile()
const args = ['run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]
const matrix = files.length === 0 || process.env.PAYHOOKS_TEST_MATRIX === '1'
// The consumer test packs every package; with the matrix it runs three times, so the tarballs are packed once.
if (
  matrix &&
  !process.env.PAYHOOKS_CONSUMER_PACKS &&
  (!files.length || files.some((f) => f.startsWith('test/consumers')))
) {
  const packs = mkdtempSync(join(tmpdir(), 'payhooks-packs-'))
  onExit(() => rmSync(packs, { recursive: true, force: true }))
  await packAll(packs)
  process.env.PAYHOOKS_CONSUMER_PACKS = packs
}
if (docsBuild) {
  const { code, output } = await docsBuild
  process.stdout.write(output)
  if (code !== 0) process.exit(1)
}
// The servers were given (REDIS_URL, ...) rather than started here: every pass shares them, one at a time.
const givenServers = startedHere.size < 4
/** Runs `pass` (scripts/test-matrix.mjs) beside others, on servers of its own stopped once it ends, output kept. */
async function runOnOwnServers(pass, passFilesGiven) {
  const services = await startServices()
  onExit(services.stop)
  try {
    return await runPass({ ...pass, env: { ...pass.env, ...services.env } }, passFilesGiven, { buffered: true })
  } finally {
    services.stop()
  }
}
// A whole run on servers of its own: every pass split into parts (scripts/test-parts.mjs), run a few at once.
const passes = files.length === 0 && !givenServers ? await runInParts() : [await runMain(), ...(await runMatrixAfter())]

/** The main pass as one vitest on the servers started above, the files given (or all), output as it comes. */
async function runMain() {
  const started = Date.now()
  const vitest = spawn(localBin('vitest'), [...args, ...files], { stdio: ['inherit', 'inherit', 'pipe'] })
  // vitest warns on every run with type tests that they are experimental (it has no setting to say it once): dropped,
  // so a passing run prints nothing but its results. Every other line of stderr goes through.
  let warned = false
  createInterface({ input: vitest.stderr }).on('line', (line) => {
    const second = warned && line.includes('Breaking changes might not follow SemVer')
    warned = line.includes('Testing types with tsc and vue-tsc is an experimental feature')
    if (!warned && !second) process.stderr.write(`${line}\n`)
  })
  // 'close': once its stderr is read to the end too.
  const code = await new Promise((resolve) => vitest.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))))
  return { label: mainLabel(), ...readReport(report), seconds: (Date.now() - started) / 1000, code }
}

/** The matrix's passes after the main one (PAYHOOKS_TEST_MATRIX=1 with files, or servers given). */
async function runMatrixAfter() {
  if (!matrix) return []
  if (givenServers) {
    const ran = []
    for (const pass of matrixPasses()) {
      const result = await runPass(pass, files)
      if (result) ran.push(result)
    }
    return ran
  }
  // Side by side, each on servers of its own (scripts/test-services.mjs), output printed once each is done, in order.
  const chosen = matrixPasses().filter((pass) => passFiles(pass, files).length > 0)
  const ran = await Promise.all(chosen.map((pass) => runOnOwnServers(pass, files)))
  for (const pass of ran) if (pass) process.stdout.write(pass.output)
  return ran.filter(Boolean)
}

/**
 * The whole run: the main pass in eight parts and each matrix pass in three, longest expected first, on
 * PAYHOOKS_TEST_SLOTS (3) sets of servers (the ones started above and two more), one part per set at a time: as many
 * vitests at once as the matrix's passes side by side were. Two full runs side by side on 4 sets each (load 20 on the
 * 2-core machine) timed out CLI and Cluster tests. A part's output is
 * printed when it ends; each pass's line sums its parts, its time from its first part's start to its last's end.
 */
async function runInParts() {
  const slotCount = Math.max(1, Number(process.env.PAYHOOKS_TEST_SLOTS) || 3)
  const listed = listTestFiles()
  // PAYHOOKS_TYPES_CHECKED=1 (.ci/run, after `pnpm typecheck`, whose `tsc -p tsconfig.test.json` checks the type tests,
  // an `expectTypeOf` that does not hold being a type error): vitest does not check them a second time.
  const typesChecked = process.env.PAYHOOKS_TYPES_CHECKED === '1'
  const all = typesChecked ? listed.filter((file) => !file.endsWith('.test-d.ts')) : listed
  if (typesChecked) {
    const types = listed.length - all.length
    console.log(
      `${types} type test files (*.test-d.ts) left to pnpm typecheck, which checked them (PAYHOOKS_TYPES_CHECKED)`,
    )
  }
  const passes = [
    { label: mainLabel(), node: process.execPath, parts: splitFiles(all, 8) },
    ...matrixPasses().map((pass) => ({
      ...pass,
      parts: splitFiles(
        passFiles(pass, all).filter((file) => !file.endsWith('.test-d.ts')),
        3,
      ),
    })),
  ]
  const jobs = passes
    .flatMap((pass) => pass.parts.map((part, i) => ({ pass, part, name: `part ${i + 1} of ${pass.parts.length}` })))
    .sort((a, b) => b.part.seconds - a.part.seconds)
  const extra = await Promise.all(Array.from({ length: slotCount - 1 }, () => startServices()))
  for (const services of extra) onExit(services.stop)
  const ownEnv = {
    REDIS_URL: process.env.REDIS_URL,
    REDIS_CLUSTER_NODES: process.env.REDIS_CLUSTER_NODES,
    DATABASE_URL: process.env.DATABASE_URL,
    MYSQL_URL: process.env.MYSQL_URL,
  }
  const slots = [ownEnv, ...extra.map((services) => services.env)]
  console.log(`${jobs.length} parts on ${slots.length} sets of servers, one part per set at a time`)
  const results = await runOnSlots(
    jobs.map(({ pass, part, name }) => async (env) => {
      const started = Date.now()
      const run = { label: pass.label, node: pass.node, env: { ...pass.env, ...env }, filters: part.files, part: name }
      const result = await runPass({ ...run, typecheck: part.typecheck }, [], { buffered: true })
      process.stdout.write(result.output)
      return { ...result, pass, started, ended: Date.now() }
    }),
    slots,
  )
  for (const services of extra) services.stop()
  // PAYHOOKS_TEST_DURATIONS=1 (on a quiet machine): the parts' split follows this run's times from now on.
  if (process.env.PAYHOOKS_TEST_DURATIONS === '1') {
    const durations = Object.assign({}, ...results.filter((r) => r.pass === passes[0]).map((r) => r.durations))
    const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => (a < b ? -1 : 1)))
    writeFileSync(join(import.meta.dirname, 'test-durations.json'), `${JSON.stringify(sorted, null, 2)}\n`)
  }
  return passes.map((pass) => {
    const own = results.filter((result) => result.pass === pass)
    const counts = own.every((result) => result.counts)
      ? [0, 1, 2].map((i) => own.reduce((sum, result) => sum + result.counts[i], 0))
      : undefined
    const seconds = (Math.max(...own.map((r) => r.ended)) - Math.min(...own.map((r) => r.started))) / 1000
    const code = Math.max(...own.map((result) => result.code))
    return { label: own[0]?.label ?? pass.label, counts, failures: own.flatMap((r) => r.failures), seconds, code }
  })
}

console.log('\nTest matrix:')
for (const { label, counts, seconds, failures, code } of passes) {
  const result = counts ? `${counts[0]} passed, ${counts[1]} failed, ${counts[2]} skipped` : 'no report written'
  console.log(`  ${label}: ${result} (${Math.round(seconds)} s)`)
  for (const failure of failures) console.log(`    failed: ${failure}`)
  // vitest also fails a run whose tests all passed on an unhandled error, which its report does not list.
  if (code !== 0 && failures.length === 0) console.log(`    failed: vitest exited ${code}; see its "Errors" above`)
}
const total = [0, 1, 2].map((i) => passes.reduce((sum, { counts }) => sum + (counts?.[i] ?? 0), 0))
const missing = passes.some(({ counts }) => !counts)
console.log(
  missing && passes.length === 1
    ? 'Tests: no report written'
    : `Tests: ${total[0]} passed, ${total[1]} failed, ${total[2]} skipped${missing ? ' (a pass wrote no report)' : ''}`,
)
process.exit(passes.some((pass) => pass.code !== 0) ? 1 : 0)
