// The throw-away servers a test pass needs, on free loopback ports in temporary folders: a redis-server, a Redis
// Cluster of three primaries, PostgreSQL (scripts/postgres-server.mjs) and MariaDB (scripts/mariadb-server.mjs). `pnpm test` (scripts/test.mjs) starts
// one set for the main pass, and one more for each matrix pass it runs beside another, so no two passes share a
// server (some tests flush a server or set its maxmemory).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, startOnFreePort } from './free-port.mjs'
import { startMariadb } from './mariadb-server.mjs'
import { startPostgres } from './postgres-server.mjs'

// The servers keep an append-only file, as the stores' health checks ask of a production Redis (without one, every
// receiver a test starts would log that warning).
const PERSISTENT = ['--appendonly', 'yes', '--appendfsync', 'everysec']

const atExit = []
/** Runs `cleanup` (synchronous) when this process exits: one 'exit' listener for them all, however many passes. */
export function onExit(cleanup) {
  if (atExit.length === 0)
    process.on('exit', () => {
      for (const run of atExit) run()
    })
  atExit.push(cleanup)
}

export const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).stdout.trim()

const ask = (cli, port, ...command) => {
  try {
    // stderr ignored: until the server listens, redis-cli says 'Connection refused'.
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

/** A redis-server on a free port: resolves once it answers PING, with its `url` and a synchronous `stop()`. */
export function startRedisServer(bin = which('redis-server'), cli = which('redis-cli')) {
  return startOnFreePort(async () => {
    const port = await freePort()
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-redis-'))
    const server = spawn(
      bin,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...PERSISTENT, '--dir', dir],
      {
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    )
    // Its log, for the error when it exits at once (a port taken before its bind says "Address already in use").
    let log = ''
    const keep = (chunk) => {
      log += chunk
    }
    server.stdout.on('data', keep)
    const stop = () => {
      server.kill()
      rmSync(dir, { recursive: true, force: true })
    }
    const answered = await until(() => server.exitCode !== null || ask(cli, port, 'ping').trim() === 'PONG')
    const started = answered && server.exitCode === null
    server.stdout.off('data', keep)
    server.stdout.resume()
    if (started) return { url: `redis://127.0.0.1:${port}`, stop }
    stop()
    throw new Error(`redis-server did not start on port ${port}: ${log.slice(-500)}`)
  })
}

/**
 * Three cluster primaries on free ports joined with `redis-cli --cluster create`: resolves once each says
 * cluster_state:ok, with `nodes` ('host:port,...') and a synchronous `stop()`; rejects with redis-cli's output.
 */
export async function startRedisCluster(bin = which('redis-server'), cli = which('redis-cli')) {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-redis-cluster-'))
  const ports = new Set()
  while (ports.size < 6) ports.add(await freePort())
  const [port1, port2, port3, ...busPorts] = ports
  const servers = []
  const stop = () => {
    for (const server of servers) server.kill()
    rmSync(dir, { recursive: true, force: true })
  }
  const primaries = [port1, port2, port3]
  for (const [i, port] of primaries.entries()) {
    const config = ['--cluster-enabled', 'yes', '--cluster-port', String(busPorts[i])]
    // One folder for the three: each its own cluster config and append-only files.
    config.push('--cluster-config-file', join(dir, `nodes-${port}.conf`), '--appenddirname', `aof-${port}`)
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', ...PERSISTENT, '--dir', dir]
    servers.push(spawn(bin, [...args, ...config], { stdio: 'ignore' }))
  }
  await until(() => primaries.every((port) => ask(cli, port, 'ping').trim() === 'PONG'))
  const addresses = primaries.map((port) => `127.0.0.1:${port}`)
  const create = spawn(cli, ['--cluster', 'create', ...addresses, '--cluster-yes'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  create.stdout.on('data', (chunk) => (output += chunk))
  create.stderr.on('data', (chunk) => (output += chunk))
  const code = await new Promise((resolve) => create.on('exit', resolve))
  // redis-cli returns once the nodes agree on the slots; each says cluster_state:ok a moment later.
  const ok = await until(() =>
    primaries.every((port) => ask(cli, port, 'cluster', 'info').includes('cluster_state:ok')),
  )
  if (code !== 0 || !ok) {
    stop()
    throw new Error(`redis-cli --cluster create failed:\n${output}`)
  }
  return { nodes: addresses.join(','), stop }
}

/**
 * A full set for one pass: the environment its tests read (REDIS_URL, REDIS_CLUSTER_NODES, DATABASE_URL, MYSQL_URL,
 * REDIS_SERVER_BIN) and a synchronous `stop()`.
 */
export async function startServices() {
  const bin = which('redis-server')
  const [redis, cluster, postgres, mariadb] = await Promise.all([
    startRedisServer(bin),
    startRedisCluster(bin),
    startPostgres(),
    startMariadb(),
  ])
  return {
    env: {
      REDIS_URL: redis.url,
      REDIS_CLUSTER_NODES: cluster.nodes,
      DATABASE_URL: postgres.url,
      MYSQL_URL: mariadb.url,
      REDIS_SERVER_BIN: bin,
    },
    stop: () => {
      redis.stop()
      cluster.stop()
      postgres.stop()
      mariadb.stop()
    },
  }
}
