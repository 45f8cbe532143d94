#!/usr/bin/env node
// Builds the packages, makes sure a real redis-server and PostgreSQL run for their tests, then runs vitest.
// REDIS_URL set: that server is used. Otherwise redis-server is started on a free loopback port and
// stopped afterwards; on a machine without it, the Debian package is installed when we are root.
// Chromium (for the dashboard test) and nginx (for the proxy tests) are installed the same way.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { packAll } from './pack-all.mjs'
import { postgresBinDir, startPostgres } from './postgres-server.mjs'
import { installRuntimeDeps } from './runtime-deps.mjs'
import { mainLabel, matrixPasses, readCounts, reportFile, runPass } from './test-matrix.mjs'

// The servers keep an append-only file, as the stores' health checks ask of a production Redis (without one, every
// receiver a test starts would log that warning).
const PERSISTENT = ['--appendonly', 'yes', '--appendfsync', 'everysec']
const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit' }).status ?? 1
// The workspace's own binaries, not npx: npx inside `pnpm test` warns about each npm_config_* variable pnpm sets.
const localBin = (name) => join(import.meta.dirname, '..', 'node_modules', '.bin', name)
const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim()

// The Redis Cluster test needs a real cluster: REDIS_CLUSTER_NODES (host:port,...) names one, otherwise three
// primaries are started on free loopback ports and joined with redis-cli --cluster create, while the build runs.
// Only that variable reaches the tests.
let clusterReady
if (!process.env.REDIS_CLUSTER_NODES) {
  if (!which('redis-server') && process.getuid?.() === 0 && which('apt-get')) {
    console.log('redis-server not found: installing the Debian package redis-server')
    if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'redis-server'])
  }
  const bin = which('redis-server')
  const cli = which('redis-cli')
  if (!bin || !cli) {
    console.error('redis-server and redis-cli are needed by the Redis Cluster test, or set REDIS_CLUSTER_NODES')
    process.exit(1)
  }
  const freePort = () =>
    new Promise((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address()
        server.close(() => resolve(port))
      })
    })
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-redis-cluster-'))
  const ports = new Set()
  while (ports.size < 6) ports.add(await freePort())
  const [port1, port2, port3, ...busPorts] = ports
  const nodes = []
  for (const [i, port] of [port1, port2, port3].entries()) {
    const config = ['--cluster-enabled', 'yes', '--cluster-port', String(busPorts[i])]
    // One folder for the three: each its own cluster config and append-only files.
    config.push('--cluster-config-file', join(dir, `nodes-${port}.conf`), '--appenddirname', `aof-${port}`)
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...PERSISTENT, '--dir', dir]
    nodes.push({ port, server: spawn(bin, [...args, ...config], { stdio: 'ignore' }) })
  }
  process.on('exit', () => {
    for (const { server } of nodes) server.kill()
    rmSync(dir, { recursive: true, force: true })
  })
  const ask = (port, ...command) => {
    try {
      return execFileSync(cli, ['-p', String(port), ...command], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      })
    } catch {
      return ''
    }
  }
  const until = async (ok) => {
    for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 50))
    return ok()
  }
  await until(() => nodes.every(({ port }) => ask(port, 'ping').trim() === 'PONG'))
  const addresses = nodes.map(({ port }) => `127.0.0.1:${port}`)
  const create = spawn(cli, ['--cluster', 'create', ...addresses, '--cluster-yes'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  create.stdout.on('data', (chunk) => (output += chunk))
  create.stderr.on('data', (chunk) => (output += chunk))
  clusterReady = new Promise((resolve) => create.on('exit', resolve)).then(async (code) => {
    // redis-cli returns once the nodes agree on the slots; each says cluster_state:ok a moment later.
    const ok = await until(() => nodes.every(({ port }) => ask(port, 'cluster', 'info').includes('cluster_state:ok')))
    if (code !== 0 || !ok) {
      console.error(`redis-cli --cluster create failed:\n${output}`)
      process.exit(1)
    }
    process.env.REDIS_CLUSTER_NODES = addresses.join(',')
    console.log(`Redis Cluster on ${process.env.REDIS_CLUSTER_NODES}`)
  })
}

// `pnpm test -- <files>` passes its '--' on; vitest would take it as the end of its options and run every file.
const files = process.argv.slice(2)
if (files[0] === '--') files.shift()

// The documentation site's test opens the built site: built by scripts/docs-build.mjs (API reference from the
// sources, then VitePress; 1-2 min), which fails on any warning of that build. It needs neither the packages' build
// nor the services, so it runs alongside them (its output is printed once it is done) and vitest waits for it.
const docsBuild =
  !files.length || files.some((f) => f.includes('docs-site'))
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

if (run(localBin('tsc'), ['--build']) !== 0) process.exit(1)

let redis
if (!process.env.REDIS_URL) {
  let bin = which('redis-server')
  if (!bin && process.getuid?.() === 0 && which('apt-get')) {
    console.log('redis-server not found: installing the Debian package redis-server')
    if (run('apt-get', ['update', '-qq']) === 0) run('apt-get', ['install', '-y', '-qq', 'redis-server'])
    bin = which('redis-server')
  }
  if (!bin) {
    console.error(
      'redis-server is needed by the Redis tests: install it (Debian: apt-get install redis-server) or set REDIS_URL',
    )
    process.exit(1)
  }
  const port = await new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-redis-'))
  redis = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...PERSISTENT, '--dir', dir], {
    stdio: 'ignore',
  })
  process.on('exit', () => {
    redis.kill()
    rmSync(dir, { recursive: true, force: true })
  })
  const cli = which('redis-cli')
  for (let i = 0; i < 100; i++) {
    try {
      // stderr ignored: until the server listens, redis-cli says 'Connection refused'.
      const pong = execFileSync(cli, ['-p', String(port), 'ping'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      })
      if (pong.trim() === 'PONG') break
    } catch {}
    await new Promise((r) => setTimeout(r, 50))
  }
  process.env.REDIS_URL = `redis://127.0.0.1:${port}`
  process.env.REDIS_SERVER_BIN = bin
  console.log(`redis-server ${bin} on ${process.env.REDIS_URL}`)
}

await clusterReady
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
  process.on('exit', postgres.stop)
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
  process.on('exit', () => rmSync(packs, { recursive: true, force: true }))
  await packAll(packs)
  process.env.PAYHOOKS_CONSUMER_PACKS = packs
}
if (docsBuild) {
  const { code, output } = await docsBuild
  process.stdout.write(output)
  if (code !== 0) process.exit(1)
}
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
const passes = [{ label: mainLabel(), counts: readCounts(report), seconds: (Date.now() - started) / 1000, code }]
if (matrix) {
  for (const pass of matrixPasses()) {
    const ran = await runPass(pass, files)
    if (ran) passes.push(ran)
  }
}
console.log('\nTest matrix:')
for (const { label, counts, seconds } of passes) {
  const result = counts ? `${counts[0]} passed, ${counts[1]} failed, ${counts[2]} skipped` : 'no report written'
  console.log(`  ${label}: ${result} (${Math.round(seconds)} s)`)
}
const total = [0, 1, 2].map((i) => passes.reduce((sum, { counts }) => sum + (counts?.[i] ?? 0), 0))
const missing = passes.some(({ counts }) => !counts)
console.log(
  missing && passes.length === 1
    ? 'Tests: no report written'
    : `Tests: ${total[0]} passed, ${total[1]} failed, ${total[2]} skipped${missing ? ' (a pass wrote no report)' : ''}`,
)
process.exit(passes.some((pass) => pass.code !== 0) ? 1 : 0)
