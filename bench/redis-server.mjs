// A throw-away redis-server on a free loopback port, for benchmarks run without REDIS_URL.
import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** Starts redis-server (REDIS_SERVER_BIN or the one on PATH); `stop()` kills it at once and removes its files. */
export async function startRedis() {
  const bin =
    process.env.REDIS_SERVER_BIN || spawnSync('sh', ['-c', 'command -v redis-server']).stdout.toString().trim()
  if (!bin) throw new Error('redis-server not found: install it or set REDIS_URL')
  const port = await freePort()
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-bench-redis-'))
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise((resolve, reject) => {
    let output = ''
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${output}`)), 10_000)
    proc.stdout.on('data', (chunk) => {
      output += chunk
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    })
    proc.on('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${output}`)))
  })
  proc.stdout.resume()
  const exited = once(proc, 'exit')
  return {
    url: `redis://127.0.0.1:${port}`,
    /** Synchronous kill (usable in an 'exit' handler); the promise resolves once the process is gone. */
    stop() {
      if (proc.exitCode === null) proc.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
      return exited
    },
  }
}

/**
 * Three redis-server primaries joined into a Cluster with redis-cli (REDIS_CLUSTER_NODES names one instead):
 * `{ nodes: [{ host, port }], stop() }`.
 */
export async function startCluster() {
  if (process.env.REDIS_CLUSTER_NODES) {
    const nodes = process.env.REDIS_CLUSTER_NODES.split(',').map((node) => {
      const [host, port] = node.split(':')
      return { host, port: Number(port) }
    })
    return { nodes, stop() {} }
  }
  const which = (cmd) =>
    spawnSync('sh', ['-c', `command -v ${cmd}`])
      .stdout.toString()
      .trim()
  const [bin, cli] = [process.env.REDIS_SERVER_BIN || which('redis-server'), which('redis-cli')]
  if (!bin || !cli) throw new Error('redis-server and redis-cli are needed, or set REDIS_CLUSTER_NODES')
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-bench-cluster-'))
  const ports = new Set()
  while (ports.size < 6) ports.add(await freePort())
  const [a, b, c, ...bus] = ports
  const procs = [a, b, c].map((port, i) =>
    spawn(
      bin,
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
        .concat(['--cluster-enabled', 'yes', '--cluster-port', String(bus[i])])
        .concat(['--cluster-config-file', join(dir, `nodes-${port}.conf`)]),
      { stdio: 'ignore' },
    ),
  )
  const ask = (port, ...command) => spawnSync(cli, ['-p', String(port), ...command]).stdout?.toString() ?? ''
  const until = async (ok) => {
    for (let i = 0; i < 200 && !ok(); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    if (!ok()) throw new Error('the bench Redis Cluster did not start')
  }
  await until(() => [a, b, c].every((port) => ask(port, 'ping').trim() === 'PONG'))
  spawnSync(cli, ['--cluster', 'create', ...[a, b, c].map((port) => `127.0.0.1:${port}`), '--cluster-yes'])
  await until(() => [a, b, c].every((port) => ask(port, 'cluster', 'info').includes('cluster_state:ok')))
  return {
    nodes: [a, b, c].map((port) => ({ host: '127.0.0.1', port })),
    stop() {
      for (const proc of procs) if (proc.exitCode === null) proc.kill('SIGKILL')
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The CPU time (user + sys, µs) the servers behind `admins` (ioredis clients) have used so far, from `INFO cpu`. */
export async function serverCpu(admins) {
  let total = 0
  for (const admin of admins) {
    const info = await admin.info('cpu')
    total += Number(/used_cpu_user:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])
  }
  return total * 1e6
}
